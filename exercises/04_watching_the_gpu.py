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

# %% tags=["exercise"]
# Exercise 04.1: In `ddp-8gcd-starved` one GCD is starved: it waits for input data while the others work. Which?
# Store its index in `starved_gcd`.
# Hint: average `gpu_busy_pct` (and `sclk_mhz`) per GCD over the whole session; one stands out.
per_gcd = None
starved_gcd = None
raise NotImplementedError("Exercise 04.1: average `gpu_busy_pct` (and `sclk_mhz`) per GCD over the whole session; one stands out.")

# %% tags=["check"]
checks.check_starved_gcd(starved_gcd, ddp)

# %% tags=["exercise"]
# Exercise 04.2: Which GCDs print a power reading at all (`power_gcds`, a list), and what is each package's mean
# power over the session (`package_power_w`, a dict package -> watts)?
# Hint: drop the rows whose `power_w` is missing (the odd GCDs print N/A), then group by `package`.
with_power = None
power_gcds = None
package_power_w = None
raise NotImplementedError("Exercise 04.2: drop the rows whose `power_w` is missing (the odd GCDs print N/A), then group by `package`.")

# %% tags=["check"]
checks.check_power_reporting(power_gcds, package_power_w, ddp)

# %% tags=["exercise"]
# Exercise 04.3: An MI250X package draws about 300 W with one GCD busy and about 500 W with both (the site's
# thresholds, printed above). From the mean powers of 04.2, how many GCDs of each package work? Store a dict
# package -> "idle", "one" or "both" in `activity`.
# Hint: `package_activity(watts, thresholds)` from lumikit.smi.interpret makes the comparison for one package.
activity = None
raise NotImplementedError("Exercise 04.3: `package_activity(watts, thresholds)` from lumikit.smi.interpret makes the comparison for one package.")

# %% tags=["check"]
checks.check_package_activity(activity, ddp)

# %%
# A hand-made snapshot of a DDP job stuck in an all-reduce: both GCDs of package 0 show 100 % GPU%, yet the
# package draws 115 W (the real LUMI table `lumikit.reference.load("rocm-smi-8gcd-one-starved")` reads 111-132 W).
waiting = Snapshot(devices=(
    DeviceReading(index=0, package=0, power_w=115.0, sclk_mhz=1650, gpu_busy_pct=100.0, vram_pct=38.0),
    DeviceReading(index=1, package=0, power_w=None, sclk_mhz=1650, gpu_busy_pct=100.0, vram_pct=38.0),
), format="rocm-smi")

# %% tags=["exercise"]
# Exercise 04.4: What does lumikit's interpretation call the `waiting` snapshot (`finding_kind`, the finding's
# kind), and are its GCDs computing (`computing`, True or False)?
# Hint: `interpret(waiting)` returns findings with a `kind` and a `message`; compare the power with the thresholds.
findings = None
finding = None
finding_kind = None
computing = None
raise NotImplementedError("Exercise 04.4: `interpret(waiting)` returns findings with a `kind` and a `message`; compare the power with the thresholds.")

# %% tags=["check"]
checks.check_busy_without_power(finding_kind, computing, waiting)

# %% [markdown] tags=["exercise"]
# **Your answer:** _replace this line with your answer and the numbers that support it._
