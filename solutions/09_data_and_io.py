# %% [markdown]
# # 09 · Data and I/O: exercises
#
# Three questions answered with numbers measured here: how much faster one file reads than many small ones, how
# many DataLoader workers are enough, and which GCD of a generated session is starved; a question on why, a
# prediction to check against a measurement, and the discussion questions at the end. Why it matters: a GPU that
# waits for data is paid for and idle, and on LUMI the file system is often where the wait comes from.

# %%
import tempfile
from pathlib import Path


from lumikit.launch.runfolder import default_runs_dir
import lumikit.checks.m09 as checks
from lumikit.io_bench import time_reads, write_image_files
from lumikit.measure import compare, measured
from lumikit.launch import WorkloadMetrics, mode_line
from lumikit.smi import tidy
from lumikit.workloads import resnet

print(mode_line())
runs_dir = default_runs_dir()  # the clone's runs/, where every run folder goes
runs_dir.mkdir(parents=True, exist_ok=True)
files = write_image_files(tempfile.mkdtemp(prefix="09-exercise-", dir=runs_dir), 1000, seed=1)
data = files.one_file.parent
times = time_reads(files)
small_files_s, one_file_s = times["many small files"], times["one .npy file"]
print(f"{files.count} small files: {small_files_s:.4f} s; one .npy file: {one_file_s:.5f} s")

# %%
checks.MORE_WORKERS  # the question and its options

# %% tags=["solution"]
# Exercise 09.q2: Predict before the next cells measure it: with 2 DataLoader workers instead of 0, what will the mean step time do? Store the letter of your prediction in `workers_prediction`.
# Hint: there is no wrong prediction here; think of how much work preparing these tiny in-memory images takes.
workers_prediction = "b"

# %% tags=["check"]
checks.check_more_workers_prediction(workers_prediction)

# %%
# The ResNet workload (tiny model, CPU here) with 0, 1 and 2 DataLoader workers, run in this process: three rounds
# interleaved (0, 1, 2, 0, 1, 2, ...), one per cell; `step_times` keeps each worker count's median.
rounds: dict[int, list[float]] = {0: [], 1: [], 2: []}


def one_round() -> None:
    for workers in (0, 1, 2):
        out = data / f"workers-{workers}-round{len(rounds[workers])}"
        resnet.main(["--model-size", "tiny", "--steps", "6", "--batch-size", "16", "--samples", "256",
                     "--workers", str(workers), "--no-progress", "--out", str(out)])
        rounds[workers].append(WorkloadMetrics.read(out).result["mean_step_time_s"])


one_round()

# %%
one_round()

# %%
one_round()
runs = {w: measured(f"{w} workers", rounds[w]) for w in (0, 1, 2)}
step_times = {w: m.median for w, m in runs.items()}
for m in runs.values():
    print(m.describe("{:.4f}", "s/step"))

# %%
snapshots = checks.exercise_session()  # generated for you: another starved GCD than in module 04
print(f"{len(snapshots)} snapshots of {len(snapshots[0].devices)} GCDs")

# %% tags=["solution"]
# Exercise 09.1: How many times faster was reading the one .npy file than reading the same images as small files? Store the ratio in `speedup`.
# Hint: a speed-up says how many times faster one way is: a ratio of the two times, above 1 when it helps.
speedup = small_files_s / one_file_s
print(f"one file is {speedup:.1f} times faster")

# %% tags=["check"]
checks.check_archive_speedup(speedup, small_files_s, one_file_s)

# %%
checks.WHY_SMALL_FILES  # the question and its options

# %% tags=["solution"]
# Exercise 09.q1: Why are many small files slow on Lustre? Pick one of the options shown above and store its letter in `why_small_files`.
# Hint: what does every open() of a file on Lustre have to ask, and of whom?
why_small_files = "b"

# %% tags=["check"]
checks.check_why_small_files(why_small_files)

# %% tags=["solution"]
# Exercise 09.2: From `step_times` (workers -> mean step time), how many workers are enough: the fewest whose step time is within 10 % of the best? Store it in `workers_enough`.
# Hint: enough is where more workers stop paying: the fewest within 10 % of the best step time.
# Tool: the dict's smallest value is the best time; compare every count's time with it.
best = min(step_times.values())
workers_enough = min(w for w, t in step_times.items() if t <= 1.10 * best)
print(f"best {best:.4f} s per step; {workers_enough} worker(s) are enough")

# %% tags=["check"]
checks.check_enough_workers(workers_enough, step_times, tolerance=0.10)

# %% tags=["solution"]
# Exercise 09.q3: Now compare with your prediction: which option do the three rounds show (step time with 2 workers against 0)? Store the letter in `workers_outcome`.
# Hint: a difference smaller than the spread of the rounds is no difference.
# Tool: `compare(...)` from lumikit.measure (`within_noise`, `ratio`).
workers_vs_none = compare(runs[2], runs[0])
print(workers_vs_none.sentence(unit="s/step", fmt="{:.4f}"))
workers_outcome = "b" if workers_vs_none.within_noise else "a" if workers_vs_none.ratio < 1 else "c"

# %% tags=["check"]
checks.check_more_workers_outcome(workers_outcome, workers_prediction, measured=rounds)

# %% tags=["solution"]
# Exercise 09.3: Which GCD is starved in your generated session `snapshots`? Store its index in `starved_gcd`.
# Hint: the starved GCD has a low busy % and a low clock while the others work.
# Tool: group `tidy(snapshots)` by "index".
per_gcd = tidy(snapshots).groupby("index")[["gpu_busy_pct", "sclk_mhz"]].mean()
starved_gcd = int(per_gcd["gpu_busy_pct"].idxmin())
print(per_gcd.round(0))

# %% tags=["check"]
checks.check_starved_gcd(starved_gcd)

# %% [markdown] tags=["solution"]
# **Question 09.A.** Why would the speed-up of 09.1 be larger still on LUMI's Lustre, and why does the seed's data
# set come as one tar to unpack into `/tmp`?
#
# **Answer.** The speed-up printed above comes from a local disk, where an `open()` costs microseconds; the ratio is
# set by the per-file cost against the bytes read, and on Lustre, where every `open()` asks the metadata server, the
# same data set in small files is far slower still. One tar is one open; unpacked into `/tmp` (memory on a LUMI
# node) the small files no longer touch Lustre at all.

# %% [markdown] tags=["solution"]
# **Question 09.B.** What did the DataLoader workers buy here, beyond the noise, and why would they matter on LUMI?
#
# **Answer.** The worker counts printed above are medians of three interleaved rounds for a tiny in-memory data set
# on a few CPU cores: the images need almost no preparation, so workers have little loading to hide, and 09.q3's
# comparison (built from the ranges printed above) says whether the difference is beyond the noise at all. On LUMI, with JPEG images decoded
# from files and 7 cores per GCD, workers are expected to help (no real LUMI timing of this is shipped; the LUMI AI
# workshop runs ResNet-50 with 7 workers per GCD).

# %% [markdown] tags=["solution"]
# **Question 09.C.** Why does one starved GCD (09.3) cost the time of all eight?
#
# **Answer.** In your generated session one GCD (printed above) averages far lower busy % and clock than the seven
# others: that rank waits for its data, and at every all-reduce the other seven wait for it, as in the real LUMI
# table of module 09.

# %% [markdown]
# ## The spawn start method
#
# On Linux a DataLoader starts its workers with `fork`: each worker is a copy of the training process. In a
# multi-node job that process has already started the GPU runtime and RCCL (threads, locks, open devices), and a
# forked copy of that state can hang or crash. The course's multi-node scripts therefore call
# `torch.multiprocessing.set_start_method('spawn')`. A loader can also choose it for its own workers.

# %%
from lumikit.workloads.lm import TextWindows, encode, load_corpus

import lumikit.checks.seeds as seed_checks

windows = TextWindows(encode(load_corpus(None)[:20000]), 32)
print(f"{len(windows)} windows of 32 bytes")

# %% tags=["solution"]
# Exercise 09.S1: Build a DataLoader over `windows` (batch size 8) with a worker started by `spawn`, store it in
# `spawn_loader`, read one batch into `first_batch`. Then: why spawn? Store the letter in `why_spawn`:
#  (a) fork copies the parent's threads, locks and GPU/RCCL state into each worker; spawn starts fresh interpreters.
#  (b) spawn starts workers faster than fork.
#  (c) fork does not work on Linux.
# Hint: a spawned worker starts a fresh interpreter: it imports torch anew, then the data set reaches it by pickling.
# Tool: `DataLoader(..., num_workers=..., multiprocessing_context=...)`.
from torch.utils.data import DataLoader

spawn_loader = DataLoader(windows, batch_size=8, num_workers=1, multiprocessing_context="spawn")
first_batch = next(iter(spawn_loader))
why_spawn = "a"
print([tuple(t.shape) for t in first_batch])

# %% tags=["check"]
seed_checks.check_spawn_loader(spawn_loader, first_batch, why_spawn)
