"""The snapshot model: what every rocm-smi / amd-smi / nvidia-smi parser returns.

One :class:`Snapshot` is one reading of one tool at one time; it holds one :class:`DeviceReading` per device
(per task too, when the output carried ``srun --label`` prefixes). Fields a format does not print are ``None``.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

# The per-device fields, in the order the JSON output and the tidy tables use.
DEVICE_FIELDS: tuple[str, ...] = (
    "index", "node_id", "task", "temp_c", "power_w", "power_cap_w", "sclk_mhz", "mclk_mhz", "fan_pct", "perf",
    "vram_pct", "vram_used_bytes", "vram_total_bytes", "gpu_busy_pct", "package",
    "name", "bus_id", "numa_node", "host",
)


@dataclass(frozen=True)
class DeviceReading:
    """One device (a GCD on LUMI) as one tool printed it.

    ``power_w`` is ``None`` where the tool printed ``N/A`` (the odd GCD of an MI250X: the package power is
    reported once, on the even GCD). ``package`` groups the GCDs that share an MI250X (from the site profile).
    ``task`` is the ``srun --label`` task number the line came from. ``name``, ``bus_id``, ``numa_node`` and
    ``host`` are filled by the views that print them (product, bus, topology, gpu_check).
    """

    index: int
    node_id: int | None = None
    task: int | None = None
    temp_c: float | None = None
    power_w: float | None = None
    power_cap_w: float | None = None
    sclk_mhz: float | None = None
    mclk_mhz: float | None = None
    fan_pct: float | None = None
    perf: str | None = None
    vram_pct: float | None = None
    vram_used_bytes: int | None = None
    vram_total_bytes: int | None = None
    gpu_busy_pct: float | None = None
    package: int | None = None
    name: str | None = None
    bus_id: str | None = None
    numa_node: int | None = None
    host: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class GpuProcess:
    """A process a tool listed as using GPUs (``--showpidgpus``, amd-smi process tables)."""

    pid: int
    devices: tuple[int, ...]
    name: str | None = None
    vram_bytes: int | None = None


@dataclass(frozen=True)
class Snapshot:
    """One reading of one tool: the devices, the format it came in, and when it was taken.

    ``timestamp`` is seconds (since the epoch for live samples, since the session start for replayed ones,
    ``None`` when unknown). ``notes`` keeps the tool's own warning and error lines; ``exit_status`` is the
    status the output itself reports (a shell transcript with ``echo $?``), else ``None``.
    """

    devices: tuple[DeviceReading, ...]
    format: str
    timestamp: float | None = None
    source: str = "<text>"
    notes: tuple[str, ...] = ()
    processes: tuple[GpuProcess, ...] = ()
    exit_status: int | None = None

    def device(self, index: int, task: int | None = None) -> DeviceReading:
        """The reading of device ``index`` (of ``task`` when the output has several tasks)."""
        for d in self.devices:
            if d.index == index and (task is None or d.task == task):
                return d
        have = sorted({d.index for d in self.devices})
        raise KeyError(f"no device {index} in this snapshot (devices: {have})")

    @property
    def indices(self) -> list[int]:
        return [d.index for d in self.devices]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``format``, ``timestamp``, ``source``, ``devices`` (field names as in the model)."""
        return {
            "format": self.format,
            "timestamp": self.timestamp,
            "source": self.source,
            "exit_status": self.exit_status,
            "notes": list(self.notes),
            "devices": [d.to_dict() for d in self.devices],
            "processes": [asdict(p) | {"devices": list(p.devices)} for p in self.processes],
        }

    def with_timestamp(self, timestamp: float | None) -> "Snapshot":
        return replace(self, timestamp=timestamp)


def merge_readings(base: DeviceReading, extra: DeviceReading) -> DeviceReading:
    """``base`` with the fields that ``extra`` knows and ``base`` does not (for views printed one after another)."""
    updates = {k: v for k, v in extra.to_dict().items() if v is not None and getattr(base, k) is None}
    return replace(base, **updates) if updates else base


__all__ = ["DEVICE_FIELDS", "DeviceReading", "GpuProcess", "Snapshot", "merge_readings"]
