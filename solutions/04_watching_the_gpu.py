# %% [markdown]
# # 04 · Watching the GPU: exercises
#
# These exercises read the `rocm-smi` session `ddp-8gcd-starved`: a **generated** session (`lumikit.smi.synth`) in
# the format of a LUMI-G node running a DDP job on all 8 GCDs, its readings calibrated on real LUMI tables
# (`lumikit.reference`). It ships with the workbook, so it works anywhere; on LUMI, `lumikit smi record` records
# your own. `tidy` turns a session into one row per sample and GCD.

# %%
import lumikit.checks.m04 as checks
from lumikit.launch import mode_line
from lumikit.site import load_site
from lumikit.smi import DeviceReading, Snapshot, interpret, load_session, tidy
from lumikit.smi.interpret import package_activity

print(mode_line())
ddp = load_session("ddp-8gcd-starved")
ddp_table = tidy(ddp)
thresholds = load_site("lumi").power
print(f"ddp-8gcd-starved: {len(ddp)} samples of {ddp_table['index'].nunique()} GCDs")
print(f"site power thresholds: idle below {thresholds.idle_below_w:g} W, one GCD busy ~{thresholds.one_gcd_busy_w:g} W, "
      f"both busy ~{thresholds.both_gcds_busy_w:g} W per package")
ddp_table[["sample", "index", "package", "power_w", "gpu_busy_pct", "sclk_mhz"]].head(8)

# %% tags=["solution"]
# Exercise 04.1: In `ddp-8gcd-starved` one GCD is starved: it waits for input data while the others work. Which?
# Store its index in `starved_gcd`.
# Hint: average `gpu_busy_pct` (and `sclk_mhz`) per GCD over the whole session; one stands out.
per_gcd = ddp_table.groupby("index")[["gpu_busy_pct", "sclk_mhz"]].mean()
starved_gcd = int(per_gcd["gpu_busy_pct"].idxmin())
print(per_gcd.round(0).T)
print("starved:", starved_gcd)

# %% tags=["check"]
checks.check_starved_gcd(starved_gcd, ddp)

# %% tags=["solution"]
# Exercise 04.2: Which GCDs print a power reading at all (`power_gcds`, a list), and what is each package's mean
# power over the session (`package_power_w`, a dict package -> watts)?
# Hint: drop the rows whose `power_w` is missing (the odd GCDs print N/A), then group by `package`.
with_power = ddp_table.dropna(subset=["power_w"])
power_gcds = sorted(int(i) for i in with_power["index"].unique())
package_power_w = {int(p): float(w) for p, w in with_power.groupby("package")["power_w"].mean().items()}
print("GCDs with a power reading:", power_gcds)
print({p: round(w) for p, w in package_power_w.items()})

# %% tags=["check"]
checks.check_power_reporting(power_gcds, package_power_w, ddp)

# %% tags=["solution"]
# Exercise 04.3: An MI250X package draws about 300 W with one GCD busy and about 500 W with both (the site's
# thresholds, printed above). From the mean powers of 04.2, how many GCDs of each package work? Store a dict
# package -> "idle", "one" or "both" in `activity`.
# Hint: `package_activity(watts, thresholds)` from lumikit.smi.interpret makes the comparison for one package.
activity = {p: package_activity(w, thresholds) for p, w in package_power_w.items()}
print(activity)

# %% tags=["check"]
checks.check_package_activity(activity, ddp)

# %%
# A hand-made snapshot of a DDP job stuck in an all-reduce: both GCDs of package 0 show 100 % GPU%, yet the
# package draws 115 W (the real LUMI table `lumikit.reference.load("rocm-smi-8gcd-one-starved")` reads 111-132 W).
waiting = Snapshot(devices=(
    DeviceReading(index=0, package=0, power_w=115.0, sclk_mhz=1650, gpu_busy_pct=100.0, vram_pct=38.0),
    DeviceReading(index=1, package=0, power_w=None, sclk_mhz=1650, gpu_busy_pct=100.0, vram_pct=38.0),
), format="rocm-smi")

# %% tags=["solution"]
# Exercise 04.4: What does lumikit's interpretation call the `waiting` snapshot (`finding_kind`, the finding's
# kind), and are its GCDs computing (`computing`, True or False)?
# Hint: `interpret(waiting)` returns findings with a `kind` and a `message`; compare the power with the thresholds.
findings = interpret(waiting)
for finding in findings:
    print(f"[{finding.kind}] {finding.message}")
finding_kind = findings[0].kind
computing = package_activity(waiting.device(0).power_w, thresholds) != "idle"

# %% tags=["check"]
checks.check_busy_without_power(finding_kind, computing, waiting)

# %% [markdown] tags=["solution"]
# **Discussion.** The starved GCD is the one whose average GPU% and clock (printed in 04.1) sit far below the
# others': it waits for its next batch, and at every all-reduce the seven others wait for it, so the whole node
# runs at its pace. Only the even GCDs print a power reading (04.2): `rocm-smi` on an MI250X reports power per
# *package*, on its first GCD, and `N/A` on the second. That is why the courses' "around 300 W" for a fully used
# GPU (the CSC summer school's demo; the LUMI AI workshop's module 04 shows 324 W with one GCD busy) needs care on
# LUMI: 300 W is one GCD's worth of a two-GCD package. The mean powers of 04.2 sit
# between the idle level and one GCD's worth, so the thresholds in 04.3 call every package "one": a mean over a
# run mixes long waits (100 % at ~130 W, as in the real LUMI table of module 04) with short bursts where every GCD
# computes (~500 W). Read power over time, not only its mean. GPU% is no proof of work (04.4): it counts the time
# a kernel is resident, and a kernel spinning on a wait (a collective waiting for a slow rank, a copy waiting for
# data) counts as 100 % busy. Power near the idle level says the arithmetic units are resting; read power first,
# then GPU%.
