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
#: GENERATED busy % per GCD: the even (first) GCD of each package at 100 %, the odd one at 40 %.
BUSY = {i: 100 if i % 2 == 0 else 40 for i in range(GCDS)}
#: The package power (W) the first GCD of each package reports: 250 W idle plus 2 W per busy % of its two GCDs.
IDLE_W, W_PER_BUSY_PCT = 250, 2
#: The clock the energy counters run on (tests replace it to get known energies).
clock = time.time
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


def package_watts(index: int) -> int:
    """What the package of GCD ``index`` draws (GENERATED): reported on its first GCD, 0 W on the second."""
    first = index - index % 2
    return IDLE_W + W_PER_BUSY_PCT * (BUSY[first] + BUSY[first + 1])


def amdsmi_init(*_flags: Any) -> None:
    _state["init"] = True
    _state["t0"] = clock()


def amdsmi_shut_down() -> None:
    _state["init"] = False


def amdsmi_get_processor_handles() -> list[_Handle]:
    if not _state["init"]:
        raise AmdSmiLibraryException("amdsmi_init() was not called")
    return list(_HANDLES)


def amdsmi_get_gpu_activity(handle: Any) -> dict[str, Any]:
    h = _check(handle, "activity")
    return {"gfx_activity": BUSY[h.index], "umc_activity": 35, "mm_activity": NA}


def amdsmi_get_power_info(handle: Any) -> dict[str, Any]:
    h = _check(handle, "power")
    return {"average_socket_power": package_watts(h.index) if h.index % 2 == 0 else 0, "current_socket_power": NA,
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
    joules = (clock() - _state["t0"]) * (package_watts(h.index) if h.index % 2 == 0 else 0)
    return {"energy_accumulator": round(joules * 1e6 / RESOLUTION_UJ), "counter_resolution": RESOLUTION_UJ,
            "timestamp": int(clock() * 1e6)}


__all__ = ["AmdSmiClkType", "AmdSmiException", "AmdSmiLibraryException", "AmdSmiTemperatureMetric",
           "AmdSmiTemperatureType", "BUSY", "GCDS", "GENERATED", "MISSING", "package_watts", "amdsmi_get_clock_info",
           "amdsmi_get_energy_count", "amdsmi_get_gpu_activity", "amdsmi_get_gpu_vram_usage",
           "amdsmi_get_power_info", "amdsmi_get_processor_handles", "amdsmi_get_temp_metric", "amdsmi_init",
           "amdsmi_shut_down"]
