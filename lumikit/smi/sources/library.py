"""The library source: read the GPUs in this process through ``amdsmi`` (ROCm 6+) or ``pynvml`` (NVIDIA).

No process is started per sample: the library is initialised once and asked for each metric at every read. A
metric the library does not give (an exception, ``"N/A"``, or the all-ones value amdsmi uses for an unsupported
field) is no reading (None, shown as N/A), never a number made up. ``module`` takes a stand-in with the same API
(:mod:`lumikit.testing.fake_amdsmi`) for tests and benchmarks.
"""
from __future__ import annotations

import json
import math
import time
from types import ModuleType
from typing import Any, Callable

from ...errors import LumikitError
from ..model import DeviceReading, Snapshot
from .base import Sample

LIBRARIES = ("amdsmi", "pynvml")
#: The values amdsmi puts in a field the GPU does not support (all ones of 16, 32 and 64 bits).
_UNSUPPORTED = {0xFFFF, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF}
#: The power fields of ``amdsmi_get_power_info``, in the order read: MI250X and older fill the average,
#: MI300 and newer the current power; ROCm 7 adds ``socket_power``.
POWER_KEYS = ("average_socket_power", "current_socket_power", "socket_power")


def _number(value: Any) -> float | None:
    """A finite number the library gave, else None (``"N/A"``, an unsupported-field marker, anything else)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int) and value in _UNSUPPORTED:
        return None
    return float(value) if math.isfinite(value) else None


def _field(data: Any, *keys: str) -> float | None:
    """The first of ``keys`` in the dict ``data`` that holds a number."""
    if not isinstance(data, dict):
        return None
    for key in keys:
        value = _number(data.get(key))
        if value is not None:
            return value
    return None


def import_library(library: str) -> ModuleType:
    """The installed ``amdsmi`` or ``pynvml`` module; a :class:`LumikitError` when it is not importable here."""
    if library not in LIBRARIES:
        raise LumikitError(f"unknown library {library!r}; use 'amdsmi' or 'pynvml'")
    try:
        return __import__(library)
    except Exception:  # noqa: BLE001 - an ImportError, or a library that fails while loading its C part
        raise LumikitError(f"the Python library {library!r} cannot be imported here; use a command or a "
                           "replay source instead") from None


class LibrarySource:
    """Read the GPUs through ``library`` (``amdsmi`` or ``pynvml``, or ``module``, a stand-in with that API)."""

    how = "library"
    paced = False

    def __init__(self, library: str, *, module: ModuleType | None = None) -> None:
        if library not in LIBRARIES:
            raise LumikitError(f"unknown library {library!r}; use 'amdsmi' or 'pynvml'")
        self._lib = module if module is not None else import_library(library)
        self.library = library
        generated = getattr(self._lib, "GENERATED", False)
        self.name = f"library:{library}" + (f" (stand-in {self._lib.__name__}, generated)" if generated else "")
        try:
            if library == "amdsmi":
                self._lib.amdsmi_init()
                self._handles = list(self._lib.amdsmi_get_processor_handles())
            else:
                self._lib.nvmlInit()
                self._handles = [self._lib.nvmlDeviceGetHandleByIndex(i)
                                 for i in range(self._lib.nvmlDeviceGetCount())]
        except Exception as exc:  # noqa: BLE001 - the library's own exception types
            raise LumikitError(f"{library} could not start ({type(exc).__name__}: {exc}); is a GPU driver loaded "
                               "on this node? Use a command source instead") from None
        if not self._handles:
            raise LumikitError(f"{library} sees no GPU on this node; use a command source, or run on a GPU node")
        self._open = True

    def read(self) -> Sample:
        raw: list[dict[str, Any]] = []
        energies: dict[int, float] = {}
        read = self._amdsmi if self.library == "amdsmi" else self._nvml
        devices = [read(i, h, raw, energies) for i, h in enumerate(self._handles)]
        text = json.dumps({"library": self.library, "gpus": raw}, default=str, separators=(",", ":"))
        return Sample(snapshot=Snapshot(devices=tuple(devices), format=self.library, timestamp=time.time(),
                                        source=self.name), raw=text, energies=energies or None)

    @staticmethod
    def _call(fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)``, or None where the library raises (a metric this GPU does not support)."""
        try:
            return fn(*args)
        except Exception:  # noqa: BLE001 - the library's exception types differ between versions
            return None

    def _amdsmi(self, i: int, h: Any, raw: list, energies: dict[int, float]) -> DeviceReading:
        am, call = self._lib, self._call
        act = call(am.amdsmi_get_gpu_activity, h)
        power = call(am.amdsmi_get_power_info, h)
        vram = call(am.amdsmi_get_gpu_vram_usage, h)
        temps = am.AmdSmiTemperatureType
        kinds = [getattr(temps, n) for n in ("EDGE", "HOTSPOT", "JUNCTION") if hasattr(temps, n)]
        temp = None
        for kind in kinds:  # the edge, else the hotspot (as the amd-smi JSON parser takes them)
            temp = _number(call(am.amdsmi_get_temp_metric, h, kind, am.AmdSmiTemperatureMetric.CURRENT))
            if temp is not None:
                break
        clk = am.AmdSmiClkType
        sclk = _field(call(am.amdsmi_get_clock_info, h, clk.GFX), "clk", "cur_clk")
        mclk = _field(call(am.amdsmi_get_clock_info, h, clk.MEM), "clk", "cur_clk")
        energy = call(am.amdsmi_get_energy_count, h) if hasattr(am, "amdsmi_get_energy_count") else None
        ticks = _field(energy, "energy_accumulator", "power")  # the key's name changed between ROCm versions
        resolution = _field(energy, "counter_resolution")       # microjoules per tick
        if ticks is not None and resolution is not None:
            energies[i] = ticks * resolution / 1e6
        used_mb, total_mb = _field(vram, "vram_used"), _field(vram, "vram_total")
        raw.append({"gpu": i, "activity": act, "power": power, "vram": vram, "temp_c": temp, "sclk": sclk,
                    "mclk": mclk, "energy": energy})
        return DeviceReading(
            index=i, power_w=_field(power, *POWER_KEYS), gpu_busy_pct=_field(act, "gfx_activity"), temp_c=temp,
            sclk_mhz=sclk, mclk_mhz=mclk,
            vram_used_bytes=int(used_mb) * 2**20 if used_mb is not None else None,
            vram_total_bytes=int(total_mb) * 2**20 if total_mb is not None else None,
            vram_pct=round(100.0 * used_mb / total_mb, 1) if used_mb is not None and total_mb else None)

    def _nvml(self, i: int, h: Any, raw: list, energies: dict[int, float]) -> DeviceReading:
        nv, call = self._lib, self._call
        util = call(nv.nvmlDeviceGetUtilizationRates, h)
        mem = call(nv.nvmlDeviceGetMemoryInfo, h)
        milliwatts = _number(call(nv.nvmlDeviceGetPowerUsage, h))
        cap = _number(call(nv.nvmlDeviceGetEnforcedPowerLimit, h))
        used, total = _number(getattr(mem, "used", None)), _number(getattr(mem, "total", None))
        reading = DeviceReading(
            index=i, temp_c=_number(call(nv.nvmlDeviceGetTemperature, h, 0)),
            power_w=milliwatts / 1000.0 if milliwatts is not None else None,
            power_cap_w=cap / 1000.0 if cap is not None else None,
            sclk_mhz=_number(call(nv.nvmlDeviceGetClockInfo, h, 1)),
            mclk_mhz=_number(call(nv.nvmlDeviceGetClockInfo, h, 2)),
            gpu_busy_pct=_number(getattr(util, "gpu", None)),
            vram_used_bytes=int(used) if used is not None else None,
            vram_total_bytes=int(total) if total is not None else None,
            vram_pct=round(100.0 * used / total, 1) if used is not None and total else None)
        raw.append({"gpu": i, **{k: v for k, v in reading.to_dict().items() if v is not None}})
        return reading

    def cancel(self) -> None:
        return None

    def close(self) -> None:
        """Let the library go (``amdsmi_shut_down`` / ``nvmlShutdown``); reads after it are errors."""
        if self._open:
            self._open = False
            self._call(self._lib.amdsmi_shut_down if self.library == "amdsmi" else self._lib.nvmlShutdown)


__all__ = ["LIBRARIES", "LibrarySource", "POWER_KEYS", "import_library"]
