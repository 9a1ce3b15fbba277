"""Which GPU a trace ran on, and that GPU's published peaks: the roofs a roofline holds its kernels to.

A torch profiler trace names its devices in ``deviceProperties`` (name, ``computeMajor``/``computeMinor``,
``numSms``, ``totalGlobalMem``, ...). The shipped profiles (``data/gpu_roofs.toml``: MI250X GCD, MI300X, H100 SXM,
each number with its source) are matched by name, else by the gfx version, compute units and memory that older ROCm
Kinetos write beside the name "AMD Radeon Graphics". A device matching none has no roofs, and says so: holding an
MI300X to an MI250X's roofs put kernels at 244 % of roof.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

PROFILES_FILE = Path(__file__).parent / "data" / "gpu_roofs.toml"


@dataclass(frozen=True)
class GpuProfile:
    """One device's published peaks: TFLOP/s per precision (``peak_tflops``, the keys of ``sites/*.toml``
    ``gcd_peak_tflops``) and HBM TB/s, with where they come from."""

    key: str
    label: str
    peak_tflops: dict[str, float]
    hbm_tb_per_s: float
    source: str
    match: dict[str, Any]


@lru_cache(maxsize=1)
def profiles() -> dict[str, GpuProfile]:
    """The shipped GPU profiles by key."""
    doc = tomllib.loads(PROFILES_FILE.read_text(encoding="utf-8"))
    return {key: GpuProfile(key, t["label"], dict(t["peak_tflops"]), float(t["hbm_tb_per_s"]), t["source"],
                            {k: t[k] for k in ("names", "not_names", "vendor", "compute", "units", "memory_gib")
                             if k in t})
            for key, t in doc.items()}


def _vendor(props: dict) -> str:
    name = str(props.get("name", ""))
    if name.startswith("AMD") or props.get("warpSize") == 64:
        return "AMD"
    return "NVIDIA" if name.startswith("NVIDIA") or props.get("warpSize") == 32 else "?"


def _matches(profile: GpuProfile, props: dict) -> bool:
    m, name = profile.match, str(props.get("name", "")).lower()
    if any(n.lower() in name for n in m.get("not_names", ())):
        return False
    if any(n.lower() in name for n in m.get("names", ())):
        return True
    if _vendor(props) != m.get("vendor") or [props.get("computeMajor"), props.get("computeMinor")] != m.get("compute"):
        return False
    if props.get("numSms") != m.get("units"):
        return False
    if "memory_gib" in m:
        mem = props.get("totalGlobalMem")
        lo, hi = m["memory_gib"]
        return isinstance(mem, (int, float)) and lo <= mem / 2**30 <= hi
    return True


def describe_device(props: dict) -> str:
    """A device of ``deviceProperties`` in a few words: its name and what identifies it."""
    from .text import printable

    bits = [f"{k} {printable(str(props[k])[:16])}" for k in ("computeMajor", "computeMinor", "numSms") if k in props]
    if isinstance(props.get("totalGlobalMem"), (int, float)):
        bits.append(f"{props['totalGlobalMem'] / 2**30:.0f} GiB")
    name = printable(str(props.get("name", "unnamed"))[:80])
    return f"{name} ({', '.join(bits)})" if bits else name


def device_profile(device_properties: Any, device: int | None = None) -> tuple[GpuProfile | None, str | None]:
    """The profile of a trace's device (``device``: its id, default the first listed) and the device in words;
    (None, words) when no profile matches, (None, None) when the trace lists no device."""
    listed = [d for d in device_properties if isinstance(d, dict)] if isinstance(device_properties, list) else []
    if not listed:
        return None, None
    chosen = next((d for d in listed if d.get("id") == device), listed[0])
    found = next((p for p in profiles().values() if _matches(p, chosen)), None)
    return found, describe_device(chosen)
