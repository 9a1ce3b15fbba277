"""Controller load of following a job: a 5-minute ``Run.wait`` plus a 5-minute GPU watch (``watch_job``: one
``srun --overlap`` step per node), counted by ``sdiag`` on a private lumi-sim cluster. Prints numbers; asserts nothing.

    .venv/bin/python benchmarks/bench_slurm_rpc.py                 # 5 + 5 minutes, about 11 minutes in all
    .venv/bin/python benchmarks/bench_slurm_rpc.py --minutes 0.5   # a quick look

Why a private cluster: everybody on this machine is root, so the shared lumi-sim's per-user counts mix other
people's work in. The private one (own folder, ports 7960+, no accounting, same scripts) runs only this benchmark.
On lumi-sim the Slurm daemons run as root too, so root's count holds their RPCs (node registration, step and
batch completion) besides the user's; sdiag's per-type table separates them: "user RPCs" below are root's count
minus the daemons' message types and minus this script's own ``sdiag`` calls. On LUMI the daemons run as the
``slurm`` user, so a learner's count there is the "user RPCs" line. Target: at most 60 for wait + watch.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SCRIPTS = REPO / "scripts" / "slurm-sim"
PORT_BASE = 7960
#: Message types that slurmd / slurmstepd send (as SlurmdUser), not the learner's commands.
DAEMON_TYPES = frozenset({
    "MESSAGE_NODE_REGISTRATION_STATUS", "REQUEST_COMPLETE_BATCH_SCRIPT", "REQUEST_STEP_COMPLETE",
    "MESSAGE_EPILOG_COMPLETE", "REQUEST_COMPLETE_PROLOG", "REQUEST_COMPLETE_JOB_ALLOCATION",
    "REQUEST_JOB_STEP_STAT", "MESSAGE_COMPOSITE", "REQUEST_PERSIST_INIT",
})
OWN_TYPES = frozenset({"REQUEST_STATS_INFO"})  # sdiag itself


def sdiag(env: dict[str, str]) -> tuple[dict[str, int], dict[str, int]]:
    """(count per message type, count per user) since the last reset."""
    text = subprocess.run(["sdiag"], env=env, capture_output=True, text=True, timeout=30, check=True).stdout
    users_part = text.split("by user", 1)[1] if "by user" in text else ""
    users = {m.group(1): int(m.group(2)) for m in re.finditer(r"^\s+(\S+)\s+\(\s*\d+\)\s+count:(\d+)", users_part,
                                                                re.M)}
    by_type = text.split("by message type", 1)[1].split("by user", 1)[0] if "by message type" in text else ""
    types = {m.group(1): int(m.group(2)) for m in re.finditer(r"^\s+(\w+)\s+\(\s*\d+\)\s+count:(\d+)", by_type, re.M)}
    return types, users


def phase_counts(env: dict[str, str]) -> dict[str, object]:
    types, users = sdiag(env)
    daemon = sum(v for k, v in types.items() if k in DAEMON_TYPES)
    own = sum(v for k, v in types.items() if k in OWN_TYPES)
    root = users.get("root", 0)
    return {"root_total": root, "daemon": daemon, "sdiag": own, "user_rpcs": root - daemon - own,
            "by_type": dict(sorted(types.items(), key=lambda kv: -kv[1]))}


def reset(env: dict[str, str]) -> None:
    subprocess.run(["sdiag", "-r"], env=env, capture_output=True, text=True, timeout=30, check=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=5.0, help="length of the wait and of the watch (each)")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between two GPU readings of the watch")
    p.add_argument("--json", type=Path, help="also write the numbers here")
    args = p.parse_args()
    seconds = args.minutes * 60

    sim_dir = Path(tempfile.mkdtemp(prefix="lumikit-slurm-sim-bench-"))
    sim_dir.chmod(0o755)
    knobs = {**os.environ, "LUMIKIT_SLURM_SIM_DIR": str(sim_dir), "LUMIKIT_SLURM_PORT_BASE": str(PORT_BASE),
             "LUMIKIT_SLURM_ACCOUNTING": "0", "LUMIKIT_SLURM_INSTALL": "0"}
    up = subprocess.run(["bash", str(SCRIPTS / "up.sh")], env=knobs, capture_output=True, text=True, timeout=300)
    if up.returncode != 0:
        print(up.stdout + up.stderr)
        return 1
    os.environ["LUMIKIT_SLURM_SIM_DIR"] = str(sim_dir)  # the lumi-sim site profile now names this cluster
    env = {**os.environ, "SLURM_CONF": str(sim_dir / "etc" / "slurm.conf")}
    from lumikit.jobs import spec
    from lumikit.launch import launch
    from lumikit.smi.sampler import Sampler, watch_job

    runs = Path(tempfile.mkdtemp(prefix="bench-slurm-rpc-runs-"))
    results: dict[str, object] = {"minutes": args.minutes, "watch_interval_s": args.interval,
                                  "machine": platform.platform(), "cpus": os.cpu_count()}
    try:
        # 1. a job that runs `seconds`, followed by Run.wait until it ends
        reset(env)
        t0 = time.monotonic()
        run = launch(spec(["sleep", f"{seconds:.0f}"], nodes=2, time="0:30:00", name="bench-wait"),
                     site="lumi-sim", runs_dir=runs)
        state = run.wait(progress=False)
        results["wait"] = {"state": state, "seconds": round(time.monotonic() - t0, 1), **phase_counts(env)}

        # 2. a running job watched for `seconds` through one long-lived step per node
        reset(env)
        t0 = time.monotonic()
        run = launch(spec(["sleep", f"{seconds + 120:.0f}"], nodes=2, time="0:30:00", name="bench-watch"),
                     site="lumi-sim", runs_dir=runs)
        while run.status() != "RUNNING":
            time.sleep(2)
        samplers = [Sampler(src, interval=args.interval).start()
                    for src in watch_job(run, interval=args.interval)]
        threading.Event().wait(seconds)
        for s in samplers:
            s.stop()
        samples = [s.samples for s in samplers]
        run.cancel()
        results["watch"] = {"samples_per_node": samples, "seconds": round(time.monotonic() - t0, 1),
                            **phase_counts(env)}
        run.wait(progress=False)
    finally:
        down = subprocess.run(["bash", str(SCRIPTS / "down.sh"), "--purge"], env=knobs, capture_output=True,
                              text=True, timeout=300)
        if down.returncode != 0:
            print(down.stdout + down.stderr)
        shutil.rmtree(sim_dir, ignore_errors=True)
        shutil.rmtree(runs, ignore_errors=True)

    wait, watch = results["wait"], results["watch"]  # type: ignore[index]
    total = wait["user_rpcs"] + watch["user_rpcs"]  # type: ignore[index]
    results["user_rpcs_total"] = total
    print(f"Slurm controller RPCs, {args.minutes:g} min Run.wait + {args.minutes:g} min watch (2-node jobs, "
          f"private lumi-sim, {results['cpus']} CPUs)")
    for name in ("wait", "watch"):
        r = results[name]  # type: ignore[index]
        extra = (f", samples per node {r['samples_per_node']}" if name == "watch" else f", final state {r['state']}")
        print(f"  {name:<5}: user RPCs {r['user_rpcs']:>4}  (root {r['root_total']}, of which daemons {r['daemon']}, "
              f"sdiag {r['sdiag']}; {r['seconds']} s{extra})")
        print("         " + ", ".join(f"{k} {v}" for k, v in r["by_type"].items()))
    print(f"  total user RPCs: {total}  (target <= 60)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
