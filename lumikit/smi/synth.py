"""The deterministic generator of the GENERATED sessions the workbook ships (``lumikit/data/smi/``).

None of them is a recording: each is a story told in a real tool format, with readings calibrated on real LUMI
outputs (``lumikit/data/reference``; MI250X: package power on the even GCD, ``N/A`` on the odd one; ~800 MHz when
idle, ~1650 MHz under load; 64 GiB per GCD). Their headers say ``kind = "generated"``:

- ``single-gcd-training``: one MI250X (2 GCDs) allocated, the training runs on GCD 0 only (rocm-smi concise,
  ROCm 6 layout);
- ``ddp-8gcd-starved``: DDP on a full node, GCD 4 starved of input: idle at ~800 MHz / 0 % while the others
  wait for it in the all-reduce at 100 % and near-idle power (``rocm-smi --json``);
- ``idle-node``: a full node with nothing running (rocm-smi concise, ROCm 5 layout with its WARNING line).

Run ``python -m lumikit.smi.synth`` to rewrite them; the same seed gives the same bytes (a test checks it).
"""
from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from .sessions import DATA_DIR, Frame, Session, SessionHeader, write_session

GCD_VRAM_BYTES = 64 * 2**30
IDLE_SCLK, BUSY_SCLK, MCLK = 800, 1650, 1600
NODE_IDS_ROCM6 = (4, 5, 6, 7, 8, 9, 10, 11)
GUIDS = (63582, 51740, 15961, 3099, 13395, 1553, 62036, 49174)


@dataclass
class Gcd:
    """The state of one GCD at one sample (what the formatters print)."""

    index: int
    temp_c: float
    power_w: float | None  # package power on the even GCD, None on the odd one
    cap_w: float
    sclk: int
    busy: int
    vram_pct: int
    perf: str = "manual"


# ---- formatters: the real layouts -----------------------------------------------------------------------------

def _banner(title: str, width: int) -> str:
    title = f" {title} " if title else ""
    left = (width - len(title)) // 2
    return "=" * left + title + "=" * (width - left - len(title))


def concise_rocm5(gcds: Sequence[Gcd], *, warning: bool = False) -> str:
    """``rocm-smi`` as ROCm 5.x prints it (``39.0c``, ``N/A`` power and ``0.0W`` cap on odd GCDs)."""
    head = ["GPU", "Temp", "AvgPwr", "SCLK", "MCLK", "Fan", "Perf", "PwrCap", "VRAM%", "GPU%"]
    rows = [[str(g.index), f"{g.temp_c:.1f}c", "N/A" if g.power_w is None else f"{g.power_w:.1f}W",
             f"{g.sclk}Mhz", f"{MCLK}Mhz", "0%", g.perf, f"{g.cap_w:.1f}W", f"{g.vram_pct}%", f"{g.busy}%"]
            for g in gcds]
    widths = [max(len(head[i]), *(len(r[i]) for r in rows)) + 2 for i in range(len(head))]
    widths[-1] = max(widths[-1], 6)

    def line(cells: Sequence[str]) -> str:
        out = ""
        for i, c in enumerate(cells):
            out += (c.rjust(widths[i] - 2) + "  ") if head[i] == "VRAM%" else c.ljust(widths[i])
        return out

    out = [_banner("ROCm System Management Interface", 80), _banner("Concise Info", 80), line(head)]
    out += [line(r) for r in rows]
    out.append("=" * 80)
    if warning:
        out.append("WARNING:                 One or more commands failed")
    out.append(_banner("End of ROCm SMI Log", 80))
    return "\n".join(out) + "\n"


def concise_rocm6(gcds: Sequence[Gcd]) -> str:
    """``rocm-smi`` as ROCm 6.1.1+ prints it on LUMI (``Device Node IDs ... Partitions``, ``°C``, 2-row header)."""
    top = ["Device", "Node", "IDs", "Temp", "Power", "Partitions", "SCLK", "MCLK", "Fan", "Perf", "PwrCap",
           "VRAM%", "GPU%"]
    sub = ["", "", "(DID,     GUID)", "(Edge)", "(Avg)", "(Mem, Compute, ID)", "", "", "", "", "", "", ""]
    rows = [[str(g.index), str(NODE_IDS_ROCM6[g.index % 8]), f"0x7408,   {GUIDS[g.index % 8]}",
             f"{g.temp_c:.1f}\u00b0C", "N/A" if g.power_w is None else f"{g.power_w:.1f}W", "N/A, N/A, 0",
             f"{g.sclk}Mhz", f"{MCLK}Mhz", "0%", g.perf, f"{g.cap_w:.1f}W", f"{g.vram_pct}%", f"{g.busy}%"]
            for g in gcds]
    widths = [max(len(top[i]), len(sub[i]), *(len(r[i]) for r in rows)) + 2 for i in range(len(top))]
    total = max(sum(widths) - 2, 80)

    def line(cells: Sequence[str], strip: bool = True) -> str:
        s = "".join(c.ljust(w) for c, w in zip(cells, widths))
        return s.rstrip() if strip else s[:total]

    out = ["", "", _banner("ROCm System Management Interface", total), _banner("Concise Info", total), line(top),
           line(sub, strip=False), "=" * total]
    out += [line(r) for r in rows]
    out += ["=" * total, _banner("End of ROCm SMI Log", total)]
    return "\n".join(out) + "\n"


def rocm_json(gcds: Sequence[Gcd]) -> str:
    """``rocm-smi --showtemp --showpower --showmaxpower --showclocks --showperflevel --showuse --showmemuse
    --showmeminfo vram --showproductname --json`` (ROCm 6 key names; one line, every value a string)."""
    data: dict[str, dict[str, str]] = {}
    for g in gcds:
        used = int(GCD_VRAM_BYTES * g.vram_pct / 100) + 11_000_000 + 4096 * g.index
        data[f"card{g.index}"] = {
            "Temperature (Sensor edge) (C)": f"{g.temp_c:.1f}",
            "Temperature (Sensor junction) (C)": f"{g.temp_c + 4 + g.busy / 20:.1f}",
            "Temperature (Sensor memory) (C)": f"{g.temp_c + 6:.1f}",
            "fclk clock speed:": "(1600Mhz)", "fclk clock level:": "0",
            "mclk clock speed:": f"({MCLK}Mhz)", "mclk clock level:": "3",
            "sclk clock speed:": f"({g.sclk}Mhz)", "sclk clock level:": "1" if g.sclk > IDLE_SCLK else "0",
            "socclk clock speed:": "(1090Mhz)", "socclk clock level:": "0",
            "Performance Level": g.perf,
            "Max Graphics Package Power (W)": f"{g.cap_w:.1f}",
            "Average Graphics Package Power (W)": "N/A" if g.power_w is None else f"{g.power_w:.1f}",
            "GPU use (%)": str(g.busy),
            "GPU Memory Allocated (VRAM%)": str(round(100 * used / GCD_VRAM_BYTES)),
            "GPU Memory Read/Write Activity (%)": str(min(100, g.busy // 3)),
            "Memory Activity": "N/A",
            "VRAM Total Memory (B)": str(GCD_VRAM_BYTES),
            "VRAM Total Used Memory (B)": str(used),
            "Card Series": "AMD INSTINCT MI250X",
            "Card Model": "0x7408",
            "Card Vendor": "Advanced Micro Devices, Inc. [AMD/ATI]",
            "Card SKU": "D65209",
            "Node ID": str(NODE_IDS_ROCM6[g.index % 8]),
            "GFX Version": "gfx90a",
        }
    data["system"] = {"Driver version": "6.7.0"}
    return json.dumps(data) + "\n"


# ---- the model: GCD states and what rocm-smi prints for them --------------------------------------------------
#
# Calibrated on the real LUMI outputs in lumikit/data/reference (see lumikit.smi.calibration, which derives the
# envelopes a test holds every generated sample to):
# - idle package: 82-102 W, 800 MHz, 0 % (rocm-smi-8gcd-idle, rocm-smi-srun-label, rocm-smi-exit-status-2);
# - one GCD computing, its pair idle: 324 W, 1650 MHz, 100 % (rocm-smi-one-gcd-busy);
# - a GCD waiting in a collective ("spin"): 100 % and 1650 MHz at near-idle power, 128-132 W for a package with both
#   GCDs waiting, 111 W with one waiting and one idle (rocm-smi-8gcd-one-starved);
# - both GCDs computing: no real reading is shipped; the package then runs into its cap (PwrCap 500 W), ~480-500 W;
# - the odd GCD prints no power (N/A) and a 0.0W cap (every real MI250X table).

IDLE, COMPUTE, SPIN = "idle", "compute", "spin"
STATES = (IDLE, COMPUTE, SPIN)
IDLE_PACKAGE_W = (84.0, 100.0)   # drawn per package and sample
COMPUTE_GCD_W = (210.0, 225.0)   # added per computing GCD
SPIN_GCD_W = (16.0, 22.0)        # added per GCD spinning on a wait
CAP_MARGIN_W = (2.0, 18.0)       # how far below the cap a package with both GCDs computing settles


@dataclass(frozen=True)
class Step:
    """What the node does at one sample: time, each GCD's state and VRAM %."""

    t: float
    states: tuple[str, ...]
    vram: tuple[int, ...]


def _node(rng: random.Random, step: Step, temps: list[float], *, cap: float = 500.0,
          perf: str = "manual") -> list[Gcd]:
    """The GCD readings of one step: package power on the even GCD from its two GCDs' states."""
    gcds = []
    for i, state in enumerate(step.states):
        pkg = step.states[i // 2 * 2: i // 2 * 2 + 2]
        power = None
        if i % 2 == 0:
            power = rng.uniform(*IDLE_PACKAGE_W)
            power += sum(rng.uniform(*COMPUTE_GCD_W) for s in pkg if s == COMPUTE)
            power += sum(rng.uniform(*SPIN_GCD_W) for s in pkg if s == SPIN)
            power = round(min(power, cap - rng.uniform(*CAP_MARGIN_W)), 0)
        heat = {IDLE: 0.0, SPIN: 0.1, COMPUTE: 0.4}[state]
        temps[i] += heat - (temps[i] - 40) * 0.03 + rng.uniform(-0.3, 0.3)
        if state == IDLE:
            sclk, busy = IDLE_SCLK, 0
        elif state == SPIN:
            sclk, busy = BUSY_SCLK, 100
        else:
            sclk, busy = BUSY_SCLK + rng.choice((-50, 0, 0, 50)), 100 if rng.random() > 0.1 else rng.choice((97, 98))
        gcds.append(Gcd(index=i, temp_c=round(temps[i], 0), power_w=power, cap_w=cap if i % 2 == 0 else 0.0,
                        sclk=sclk, busy=busy, vram_pct=step.vram[i], perf=perf))
    return gcds


# ---- stories: a plan of states per sample, rendered in a real tool format ---------------------------------------

def single_gcd_training_plan() -> list[Step]:
    """Two GCDs allocated, the training on GCD 0: start-up, 76 s of training, the end."""
    steps = []
    for t in range(90):
        if t < 8 or t >= 84:  # container start and model load; the end of the run
            steps.append(Step(float(t), (IDLE, IDLE), (0 if t < 8 else 71, 0)))
        else:
            steps.append(Step(float(t), (COMPUTE, IDLE), (min(71, 8 + 9 * (t - 8)), 0)))
    return steps


def ddp_8gcd_starved_plan() -> list[Step]:
    """DDP on 8 GCDs, GCD 4 starved of input. In each cycle of six 2-s samples GCD 4 waits for data four times
    (idle, 800 MHz) while the seven others wait for it in the all-reduce (100 %, near-idle power); then GCD 4
    computes its step while the others still wait; then all eight compute the next step."""
    steps = []
    for t in range(0, 120, 2):
        if t < 10:
            steps.append(Step(float(t), (IDLE,) * 8, (0,) * 8))
            continue
        phase = (t - 10) // 2 % 6
        if phase < 4:
            states = tuple(IDLE if i == 4 else SPIN for i in range(8))
        elif phase == 4:
            states = tuple(COMPUTE if i == 4 else SPIN for i in range(8))
        else:
            states = (COMPUTE,) * 8
        steps.append(Step(float(t), states, (78,) * 8))
    return steps


def idle_node_plan() -> list[Step]:
    """A full node with nothing running."""
    return [Step(float(t), (IDLE,) * 8, (0,) * 8) for t in range(30)]


GENERATED_BY = "generated by lumikit.smi.synth, calibrated on the real LUMI outputs in lumikit/data/reference"


def single_gcd_training(seed: int = 4) -> Session:
    rng = random.Random(seed)
    temps = [44.0, 41.0]
    frames = [Frame(t=s.t, stdout=concise_rocm6(_node(rng, s, temps))) for s in single_gcd_training_plan()]
    header = SessionHeader(name="single-gcd-training", kind="generated", source=GENERATED_BY,
                           description="generated: a training on GCD 0 of a 2-GCD allocation (small-g), GCD 0 near "
                                       "300 W and 100 %, its pair GCD 1 idle at 800 MHz; in the layout of "
                                       "`rocm-smi` (ROCm 6)",
                           interval_s=1.0)
    return Session(header=header, frames=frames)


def ddp_8gcd_starved(seed: int = 9) -> Session:
    rng = random.Random(seed)
    temps = [42.0, 43.0, 38.0, 45.0, 41.0, 43.0, 45.0, 44.0]
    frames = [Frame(t=s.t, stdout=rocm_json(_node(rng, s, temps))) for s in ddp_8gcd_starved_plan()]
    header = SessionHeader(name="ddp-8gcd-starved", kind="generated", source=GENERATED_BY,
                           description="generated: DDP on a full LUMI-G node with GCD 4 starved of input: GCD 4 idles "
                                       "at 800 MHz / 0 % while the seven others wait for it in the all-reduce "
                                       "(100 % at ~130 W per package); every sixth sample all eight compute (~500 W). "
                                       "In the layout of `rocm-smi --showtemp --showpower --showmaxpower "
                                       "--showclocks --showperflevel --showuse --showmemuse --showmeminfo vram "
                                       "--showproductname --json` (ROCm 6)",
                           interval_s=2.0)
    return Session(header=header, frames=frames)


def idle_node(seed: int = 1) -> Session:
    rng = random.Random(seed)
    temps = [39.0, 45.0, 43.0, 41.0, 44.0, 41.0, 41.0, 40.0]
    frames = [Frame(t=s.t, stdout=concise_rocm5(_node(rng, s, temps, cap=560.0, perf="auto"), warning=True))
              for s in idle_node_plan()]
    header = SessionHeader(name="idle-node", kind="generated", source=GENERATED_BY,
                           description="generated: a LUMI-G node with nothing running, every package at 84-100 W, "
                                       "every GCD at 800 MHz and 0 %; in the layout of `rocm-smi` (ROCm 5, with its "
                                       "WARNING line)",
                           interval_s=1.0)
    return Session(header=header, frames=frames)


PLANS: dict[str, Callable[[], list[Step]]] = {
    "single-gcd-training": single_gcd_training_plan,
    "ddp-8gcd-starved": ddp_8gcd_starved_plan,
    "idle-node": idle_node_plan,
}

STORIES: dict[str, Callable[[], Session]] = {
    "single-gcd-training": single_gcd_training,
    "ddp-8gcd-starved": ddp_8gcd_starved,
    "idle-node": idle_node,
}


def write_all(folder: Path = DATA_DIR, *, force: bool = True) -> list[Path]:
    """(Re)write every shipped session into ``folder`` as ``<name>.jsonl.gz``."""
    folder.mkdir(parents=True, exist_ok=True)
    return [write_session(make(), folder / f"{name}.jsonl.gz", force=force) for name, make in STORIES.items()]


if __name__ == "__main__":  # pragma: no cover
    for p in write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else DATA_DIR):
        print(p)
