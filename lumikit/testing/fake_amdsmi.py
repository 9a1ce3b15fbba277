"""A stand-in for the ``amdsmi`` Python library (its API, GENERATED values): a node of 4 MI250X packages, 8 GCDs.

For tests and the sampler benchmark on machines without AMD GPUs; :class:`lumikit.smi.sources.LibrarySource`
takes it as ``module=``, ``python -m lumikit.record sample --library lumikit.testing.fake_amdsmi`` too. The names
and return shapes follow ROCm/amdsmi's Python interface (``amdsmi_get_gpu_activity`` -> ``gfx_activity`` ...,
``amdsmi_get_power_info`` -> ``average_socket_power`` on MI250X, ``amdsmi_get_clock_info`` -> ``clk``,
``amdsmi_get_gpu_vram_usage`` in MB, ``amdsmi_get_energy_count`` -> ``energy_accumulator`` ticks of
``counter_resolution`` microjoules). As on MI250X, the second GCD of each package reports 0 W (its package
partner carries the package power) and the edge temperature is ``"N/A"``. :data:`MISSING` names metrics this
stand-in then answers as unsupported (an exception), to test that a reader says N/A.
"""
from __future__ import annotations

import time
from enum import IntEnum
from typing import Any

#: Everything this module returns is made up.
GENERATED = True
GCDS = 8
#: Metrics to answer as unsupported: any of "activity", "power", "temp", "clock", "vram", "energy".
MISSING: set[str] = set()
NA = "N/A"
RESOLUTION_UJ = 15.3  # microjoules per energy tick (generated)


class AmdSmiException(Exception):
    """The library's base exception."""


class AmdSmiLibraryException(AmdSmiException):
    """What the library raises for a metric the GPU does not support."""


class AmdSmiTemperatureType(IntEnum):
    EDGE = 0
    HOTSPOT = 1
    JUNCTION = 1
    VRAM = 2


class AmdSmiTemperatureMetric(IntEnum):
    CURRENT = 0


class AmdSmiClkType(IntEnum):
    SYS = 0
    GFX = 0
    DF = 1
    DCEF = 2
    SOC = 3
    MEM = 4


class _Handle:
    """One GCD."""

    def __init__(self, index: int) -> None:
        self.index = index

    def __repr__(self) -> str:
        return f"<fake amdsmi handle {self.index}>"


_state: dict[str, Any] = {"init": False, "t0": 0.0}
_HANDLES = [_Handle(i) for i in range(GCDS)]


def _check(handle: Any, metric: str) -> _Handle:
    if not _state["init"]:
        raise AmdSmiLibraryException("amdsmi_init() was not called")
    if not isinstance(handle, _Handle):
        raise AmdSmiException(f"not a processor handle: {handle!r}")
    if metric in MISSING:
        raise AmdSmiLibraryException(f"{metric}: not supported")
    return handle


def _busy(index: int) -> int:
    """GENERATED: even GCDs busy, odd GCDs busy only in every other 10 s."""
    return 100 if index % 2 == 0 or int(time.time() - _state["t0"]) // 10 % 2 == 0 else 0


def amdsmi_init(*_flags: Any) -> None:
    _state["init"] = True
    _state["t0"] = time.time()


def amdsmi_shut_down() -> None:
    _state["init"] = False


def amdsmi_get_processor_handles() -> list[_Handle]:
    if not _state["init"]:
        raise AmdSmiLibraryException("amdsmi_init() was not called")
    return list(_HANDLES)


def amdsmi_get_gpu_activity(handle: Any) -> dict[str, Any]:
    h = _check(handle, "activity")
    return {"gfx_activity": _busy(h.index), "umc_activity": 35, "mm_activity": NA}


def amdsmi_get_power_info(handle: Any) -> dict[str, Any]:
    h = _check(handle, "power")
    package_watts = 250 + 2 * (_busy(h.index) + _busy(h.index + 1 if h.index % 2 == 0 else h.index - 1))
    return {"average_socket_power": package_watts if h.index % 2 == 0 else 0, "current_socket_power": NA,
            "gfx_voltage": NA, "soc_voltage": NA, "mem_voltage": NA, "power_limit": 560}


def amdsmi_get_temp_metric(handle: Any, sensor_type: Any, metric: Any) -> int:
    h = _check(handle, "temp")
    if sensor_type == AmdSmiTemperatureType.EDGE:
        raise AmdSmiLibraryException("edge temperature: not supported on MI250X")
    return 40 + h.index


def amdsmi_get_clock_info(handle: Any, clock_type: Any) -> dict[str, Any]:
    _check(handle, "clock")
    mhz = 1600 if clock_type == AmdSmiClkType.MEM else 1700
    return {"clk": mhz, "min_clk": 500, "max_clk": mhz, "clk_locked": False, "clk_deep_sleep": NA}


def amdsmi_get_gpu_vram_usage(handle: Any) -> dict[str, int]:
    h = _check(handle, "vram")
    return {"vram_total": 65520, "vram_used": 1024 * (h.index + 1)}


def amdsmi_get_energy_count(handle: Any) -> dict[str, Any]:
    h = _check(handle, "energy")
    joules = (time.time() - _state["t0"]) * (300.0 if h.index % 2 == 0 else 0.0)
    return {"energy_accumulator": int(joules * 1e6 / RESOLUTION_UJ), "counter_resolution": RESOLUTION_UJ,
            "timestamp": int(time.time() * 1e6)}


__all__ = ["AmdSmiClkType", "AmdSmiException", "AmdSmiLibraryException", "AmdSmiTemperatureMetric",
           "AmdSmiTemperatureType", "GCDS", "GENERATED", "MISSING", "amdsmi_get_clock_info",
           "amdsmi_get_energy_count", "amdsmi_get_gpu_activity", "amdsmi_get_gpu_vram_usage",
           "amdsmi_get_power_info", "amdsmi_get_processor_handles", "amdsmi_get_temp_metric", "amdsmi_init",
           "amdsmi_shut_down"]
