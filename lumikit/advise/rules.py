"""``advise``: a ranked prescription from everything a run measured, rule-based and offline.

Each rule reads measurements the workbook already makes (the critical path and its what-ifs, the GPU idle causes,
the kernels of the analysed steps, the collectives matched across ranks, the GPU record's card, the log doctor,
the trace health check) and, when its cause shows, writes one :class:`Finding`: a priority, a title, the evidence
(numbers and where they come from), an upper bound on the gain, the remedy (LUMI's flag, knob, variable or
module, and the lumikit option where there is one) and what to measure again. The gain is the critical path's
what-if of removing (waits) or halving (work) the cause, never more than the share of the path the cause holds:
an upper bound, since a fix rarely removes all of it. Priority: high from :data:`HIGH_PCT` % of the step, medium
from :data:`MEDIUM_PCT` %, else low. No model and no network: the same input gives the same advice.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .evidence import FP32_GEMM, GEMM, MEMORY_BOUND, SYNC_OPS, RankEvidence
from .findings import Finding, percent, priority_of


def _capped(what_if: float | None, share: float) -> float:
    """A what-if's speed-up (%), never more than the path share (0-1) the cause holds."""
    return round(min(what_if if what_if is not None else 100.0 * share, 100.0 * share), 2)


def rule_data_loading(e: RankEvidence) -> Finding | None:
    share = e.bound_by.get("data_loading", 0.0)
    starved = sum(us for c, us in e.causes.items() if "data loading" in c)
    if share < 0.03 and starved < 0.03 * max(e.span_us, 1):
        return None
    gain = _capped(e.what_if.get("loader"), share)
    return Finding(
        "data_loading", priority_of(gain), "The GPU waits for the data loader",
        [f"critical path: data loading holds {100 * share:.1f} % of rank {e.rank}'s path "
         f"({e.path_us / 1000:.2f} ms over {e.steps} steps); what-if without it: {gain:.1f} % faster",
         f"idle causes: the GPU was idle {starved / 1000:.2f} ms starved by data loading "
         f"({100 * starved / max(e.span_us, 1):.1f} % of its span)"],
        gain, "load batches in worker processes: DataLoader(num_workers=N, pin_memory=True, persistent_workers=True, "
              "prefetch_factor=2) with N <= the cores of the task minus one; on LUMI-G give each GCD its 7 cores "
              "(#SBATCH --cpus-per-task=7, one task per GCD) and bind them to the GCD's NUMA node "
              "(srun --cpu-bind=mask_cpu:...; lumikit run -c 7 --cpu-bind auto; the course scripts' --workers N); "
              "read the data set from one file (HDF5, squashfs) on /flash or /scratch, not many small files",
        "trace the same steps again (lumikit run ... --profile torch) and compare: `lumikit trace idle` should "
        "show no 'starved: data loading' and `lumikit trace diff BEFORE AFTER` a shorter step",
        ["critical path", "idle causes"])


def rule_small_kernels(e: RankEvidence) -> Finding | None:
    if e.kernels == 0:
        return None
    per_step = e.kernels / e.steps
    median = float(np.median(e.kernel_us))
    host = e.bound_by.get("cpu_bound", 0.0) + e.bound_by.get("gpu_kernel_launch_overhead", 0.0) \
        + e.bound_by.get("host_untraced", 0.0)
    idle = e.idle_us / max(e.span_us, 1)
    if not (per_step >= 200 and median < 20 and host >= 0.3):
        return None
    gain = _capped(100.0 * idle, host)
    return Finding(
        "small_kernels", priority_of(gain), f"Host-bound: {per_step:.0f} small kernels per step",
        [f"kernels: {per_step:.0f} per step, median {median:.1f} µs on the GPU (rank {e.rank})",
         f"critical path: host work and launches hold {100 * host:.1f} % of the path",
         f"idle causes: the GPU is idle {100 * idle:.1f} % of its span between these kernels"],
        gain, "launch fewer, larger kernels: torch.compile(model) (the course scripts' --compile), capture the step "
              "in HIP graphs (torch.cuda.graphs / mode='reduce-overhead'), fuse the optimizer (--fused-optimizer, "
              "AdamW(fused=True)), and raise the batch size (--batch-size) so each kernel does more work",
        "trace again: kernels per step should drop and `lumikit trace critical-path` should move from cpu_bound "
        "to gpu_compute_bound",
        ["critical path", "idle causes", "kernels"])


def _host_share(e: RankEvidence) -> float:
    return e.bound_by.get("cpu_bound", 0.0) + e.bound_by.get("gpu_kernel_launch_overhead", 0.0) \
        + e.bound_by.get("host_untraced", 0.0)


def rule_one_off(e: RankEvidence) -> Finding | None:
    """A single launch, allocation or module load of milliseconds in the analysed steps: a one-off cost (the first
    launch loads the GPU code, the first allocation grows the cache) in a window that should show the steady state.
    Worth at most its share of the window, within the host's share of the path."""
    name, us = e.longest_call
    if us < 1000 or us < 0.2 * max(e.window_us, 1):
        return None
    gain = min(percent(us / max(e.window_us, 1)), percent(_host_share(e)))
    return Finding(
        "one_off", priority_of(gain), "The analysed step holds a one-off cost: profile later steps",
        [f"trace: one {name} call takes {us / 1000:.2f} ms, {100 * us / max(e.window_us, 1):.1f} % of the "
         f"{e.window_us / 1000:.2f} ms of rank {e.rank}'s {e.steps} analysed step{'s' if e.steps > 1 else ''}: the "
         f"first launch of a kernel loads its code object, the first allocations grow the caching allocator",
         f"critical path: host work holds {100 * _host_share(e):.1f} % of the path"],
        gain, "warm up before recording: torch.profiler.schedule(wait=1, warmup=2, active=3) (lumikit's profiler: "
              "LUMIKIT_PROFILE_SCHEDULE=1,2,3,1 with lumikit run ... --profile torch), and run advise again on the "
              "steady state",
        "`lumikit trace critical-path` of a later step: no single launch call of milliseconds", ["trace",
                                                                                                 "critical path"],
        first=True)


def rule_host_bound(e: RankEvidence) -> Finding | None:
    """The host holds the step (not through many small kernels, which :func:`rule_small_kernels` names)."""
    host, idle = _host_share(e), e.idle_us / max(e.span_us, 1)
    if host < 0.5 or idle < 0.3 or (e.kernels / e.steps >= 200 and float(np.median(e.kernel_us)) < 20):
        return None
    gain = _capped(100.0 * idle, host)
    top = [x for x in e.path_events if x["category"] == "cpu_bound"][:3]
    return Finding(
        "host_bound", priority_of(gain), "The host holds the step; the GPU waits",
        [f"critical path: host work holds {100 * host:.1f} % of rank {e.rank}'s path"
         + (" (most: " + ", ".join(f"{x['name'][:40]} {x['path_us'] / 1000:.2f} ms" for x in top) + ")" if top else ""),
         f"idle causes: the GPU is idle {100 * idle:.1f} % of its span"],
        gain, "give the GPU more work per launch (a larger --batch-size), compile the model (torch.compile, --compile) "
              "or capture it in HIP graphs; check the process has its cores (--cpus-per-task=7 per GCD, "
              "--cpu-bind=mask_cpu:..., lumikit run -c 7 --cpu-bind auto) and move Python work out of the step",
        "trace again: `lumikit trace critical-path` should move towards gpu_compute_bound and `lumikit trace idle` "
        "show less idle", ["critical path", "idle causes"])


def rule_fp32_matrix(e: RankEvidence) -> Finding | None:
    if e.kernels == 0:
        return None
    fp32 = np.array([bool(re.search(FP32_GEMM, n)) for n in e.kernel_names])
    gemm = np.array([bool(re.search(GEMM, n)) for n in e.kernel_names])
    fp32_us, gemm_us, all_us = float(e.kernel_us[fp32].sum()), float(e.kernel_us[gemm].sum()), float(e.kernel_us.sum())
    if fp32_us < 0.2 * max(gemm_us, 1) or fp32_us < 0.1 * max(all_us, 1):
        return None
    share = e.bound_by.get("gpu_compute_bound", 0.0) * fp32_us / max(all_us, 1)
    gain = _capped(e.what_if.get("fp32"), share)
    return Finding(
        "fp32_matrix", priority_of(gain), "Matrix work runs in fp32",
        [f"kernels: fp32 GEMMs are {100 * fp32_us / max(gemm_us, 1):.0f} % of the GEMM time and "
         f"{100 * fp32_us / max(all_us, 1):.0f} % of all kernel time (rank {e.rank}; names such as "
         f"{next(n for n, f in zip(e.kernel_names, fp32) if f)[:48]})",
         f"critical path: what-if these kernels twice as fast: {gain:.1f} % faster (matrix cores do bf16 "
         f"at several times their fp32 rate: MI250X's bf16 matrix peak is 4x its fp32 matrix peak)"],
        gain, "run the forward and backward under torch.autocast('cuda', dtype=torch.bfloat16) (the course scripts' "
              "--precision bf16), keep the optimizer in fp32; let PyTorch tune the GEMMs with "
              "PYTORCH_TUNABLEOP_ENABLED=1 (--tunableop; the tuned table is written per node)",
        "trace again: the GEMM names should carry BBS/HHS (bf16/fp16) instead of SB, and the step be shorter "
        "(`lumikit trace diff`)", ["kernels", "critical path"])


def rule_blocking_sync(e: RankEvidence) -> Finding | None:
    if not e.syncs:
        return None
    # a blocking call empties the GPU's queue: from then to the end of its step, the GPU waits for every launch.
    # Without the wait the host would have launched that much sooner, no more: per step, the smaller of the two
    first: dict[int, float] = {}
    blocked: dict[int, float] = {}
    for _, _, t, t_end, step in e.syncs:
        if step >= 0:
            first[step] = min(first.get(step, t), t)
            blocked[step] = blocked.get(step, 0.0) + (t_end - t)
    after: dict[int, float] = {}
    for g in e.gaps:
        if g["step"] in first and g["start_us"] >= first[g["step"]] - 1.0:
            after[g["step"]] = after.get(g["step"], 0.0) + g["dur_us"]
    drained = sum(after.values())
    saved = sum(min(after[s], blocked[s]) for s in after)
    host = e.bound_by.get("cpu_bound", 0.0) + e.bound_by.get("gpu_kernel_launch_overhead", 0.0) \
        + e.bound_by.get("host_untraced", 0.0)
    share = min(saved / max(e.span_us, 1), host)  # within the host's share of the path
    if share < 0.02:
        return None
    ops: dict[str, int] = {}
    for call, op, _, _, _ in e.syncs:
        key = f"{op} ({SYNC_OPS[op]}) -> {call}" if op else call
        ops[key] = ops.get(key, 0) + 1
    named = ", ".join(f"{k}: {n / e.steps:.1f} per step" for k, n in sorted(ops.items(), key=lambda kv: -kv[1]))
    gain = percent(share)
    return Finding(
        "blocking_sync", priority_of(gain), "A blocking sync in every step empties the GPU's queue",
        [f"trace: the host blocks in {named} (rank {e.rank})",
         f"idle causes: from these waits to the end of their steps the GPU sat idle {drained / 1000:.2f} ms "
         f"({100 * drained / max(e.span_us, 1):.1f} % of its span), waiting for each launch of a host that had "
         f"fallen behind; the host was blocked {sum(blocked.values()) / 1000:.2f} ms in them, so at most "
         f"{saved / 1000:.2f} ms comes back; critical path: host work holds {100 * host:.1f} % of the path"],
        gain, "keep values on the GPU inside the step: accumulate the loss as a tensor and call .item() (or print) "
              "every N steps or at the end; avoid .cpu()/.numpy()/torch.nonzero/boolean indexing in the step; "
              "copy with .to('cpu', non_blocking=True) into pinned memory when a value must come back",
        "trace again: `lumikit trace idle` should lose the idle after the sync and `lumikit trace diff` show "
        "the step shorter", ["trace", "idle causes"])


def rule_comm_overlap(e: RankEvidence, waits_us: float = 0.0) -> Finding | None:
    share = e.bound_by.get("gpu_communication_bound", 0.0)
    if share < 0.05:
        return None
    wait_share = min(share, waits_us / max(e.path_us, 1))
    true_share = share - wait_share
    if true_share < 0.03:
        return None
    gain = _capped(e.what_if.get("comm"), true_share)
    overlap = "" if e.comm_overlap is None else f"; compute overlapped {100 * e.comm_overlap:.0f} % of it"
    return Finding(
        "comm_overlap", priority_of(gain), "The all-reduce is not hidden behind the backward pass",
        [f"critical path: communication kernels hold {100 * share:.1f} % of rank {e.rank}'s path"
         + (f", {100 * wait_share:.1f} % of the path of it waiting for a late rank" if wait_share else "") + overlap,
         f"what-if without the communication's own time: at most {gain:.1f} % faster"],
        gain, "let DDP overlap it: DistributedDataParallel(model, bucket_cap_mb=25..100, gradient_as_bucket_view=True) "
              "(smaller first buckets start sooner), no_sync() for gradient accumulation, and RCCL on the Slingshot "
              "network (aws-ofi-rccl plugin; NCCL_SOCKET_IFNAME=hsn0,hsn1,hsn2,hsn3); bf16 gradients halve the bytes",
        "trace again and read `lumikit trace collectives`: the true time per all-reduce and the share of the path "
        "under communication should fall", ["critical path", "collectives"])


def rule_memory_bound(e: RankEvidence) -> Finding | None:
    if e.kernels == 0:
        return None
    mem = np.array([bool(re.search(MEMORY_BOUND, n)) and not re.search(GEMM, n) for n in e.kernel_names])
    mem_us, all_us = float(e.kernel_us[mem].sum()), float(e.kernel_us.sum())
    kshare = mem_us / max(all_us, 1)
    if kshare < 0.05 or e.kernels / e.steps >= 200 and float(np.median(e.kernel_us)) < 20:
        return None  # many tiny kernels: the small-kernels rule speaks for them
    share = e.bound_by.get("gpu_compute_bound", 0.0) * kshare
    gain = _capped(e.what_if.get("memory"), share)
    return Finding(
        "memory_bound", priority_of(gain, cap="medium"), "Memory-bound kernels (elementwise, norms, softmax)",
        [f"kernels: elementwise/reduction kernels are {100 * kshare:.0f} % of the kernel time (rank {e.rank}); "
         f"by name only: a roofline (lumikit run --profile roofline, `lumikit rocprof roofline`) measures it",
         f"critical path: what-if they ran twice as fast: {gain:.1f} % faster"],
        gain, "fuse them: torch.compile (--compile) fuses elementwise chains; use fused kernels "
              "(F.scaled_dot_product_attention, fused AdamW --fused-optimizer, apex/torch fused norms); "
              "channels_last for convolutions (--channels-last)",
        "roofline the top kernels again (lumikit rocprof roofline): fewer, larger kernels nearer the memory roof",
        ["kernels", "critical path"])


def roofline_evidence(folder: Path) -> dict | None:
    """The roofline of the rocprofv3 counters under ``folder`` (a run profiled with --profile roofline): the share
    of kernel time in memory-bound kernels and the largest of them; None when the folder holds no counters."""
    from ..rocprof.roofline import read_roofline

    if not any(True for _ in zip(range(1), folder.rglob("*counter_collection.csv"))):
        return None
    k = read_roofline(folder).kernels
    total = float(k["duration_ns"].sum())
    if not total > 0:
        return None
    mem = k[k["bound"] == "memory"].sort_values("duration_ns", ascending=False)
    return {"memory_share": float(mem["duration_ns"].sum()) / total,
            "top": [(str(r.kernel), float(r.duration_ns) / total, float(r.pct_of_roof))
                    for r in mem.head(3).itertuples()]}


def rule_roofline_memory(roof: dict, e: RankEvidence | None) -> Finding | None:
    """Memory-bound kernels measured by the roofline (counters), the path share from the trace where there is one."""
    share = roof["memory_share"]
    if share < 0.1:
        return None
    gain = percent(e.bound_by.get("gpu_compute_bound", 0.0) * share / 2) if e is not None else None
    top = ", ".join(f"{name[:50]} {100 * s:.0f} % of kernel time at {pct:.0f} % of its roof"
                    for name, s, pct in roof["top"])
    return Finding(
        "memory_bound", priority_of(gain) if gain is not None else ("medium" if share >= 0.3 else "low"),
        "Memory-bound kernels hold much of the GPU time (measured on the roofline)",
        [f"roofline: {100 * share:.0f} % of the kernel time is in kernels below the ridge point ({top})"]
        + ([f"critical path: halving them is worth at most {gain:.1f} % (half their share of the path's GPU "
            f"compute)"] if gain is not None else
           ["no profiler trace beside the counters: the gain on the step is not known (trace a run too: "
            "--profile torch)"]),
        gain, "fuse them: torch.compile (--compile) fuses elementwise chains; use fused kernels "
              "(F.scaled_dot_product_attention, fused AdamW --fused-optimizer, fused norms); bf16 halves the bytes "
              "each one moves (--precision bf16); a kernel far below its roof is a fusion or layout target first",
        "roofline again (lumikit run ... --profile roofline; `lumikit rocprof roofline RUN`): less time below the "
        "ridge point", ["roofline"] + (["critical path"] if e is not None else []))


RANK_RULES: tuple[Callable[[RankEvidence], Finding | None], ...] = (
    rule_one_off, rule_data_loading, rule_small_kernels, rule_host_bound, rule_fp32_matrix, rule_blocking_sync,
    rule_memory_bound)


# -- rules over several ranks ------------------------------------------------------------------------------
def rule_straggler(matched: dict, e: RankEvidence | None) -> Finding | None:
    rows = [r for r in matched.get("stragglers", []) if r["times_last"]]
    if not rows:
        return None
    top = rows[0]
    if top["share"] < 0.3:
        return None
    waited = rank_wait_us(matched, e) if e is not None else 0.0
    share = waited / max(e.path_us, 1) if e is not None else 0.0
    gain = percent(min(share, 1.0))
    node = (matched.get("nodes") or {}).get(top["rank"])
    return Finding(
        "straggler", priority_of(gain), f"Rank {top['rank']} arrives last: the others wait for it",
        [f"collectives: rank {top['rank']} was last at {top['times_last']} of {top['of']} collectives "
         f"({100 * top['share']:.0f} %), {top['mean_delay_us'] / 1000:.2f} ms late on average "
         f"({matched['method'].split(':')[0]})",
         f"critical path: rank {e.rank if e else '?'} waits for it {waited / 1000:.2f} ms over the analysed steps, "
         f"{gain:.1f} % of its path" + (f"; rank {top['rank']} ran on {node}" if node else "")],
        gain, f"find what rank {top['rank']} does longer (`lumikit trace critical-path --rank {top['rank']}` and "
              f"`lumikit trace diff` against rank {e.rank if e else 0}): its CPU binding (one task per GCD with "
              f"--cpus-per-task=7 and --cpu-bind=mask_cpu:..., lumikit run --cpu-bind auto), its data shard "
              f"(uneven samples per rank: DistributedSampler with drop_last=True), or its node (a slow or "
              f"throttled GCD: `lumikit report RUN` of that node; exclude it with --exclude)",
        "trace every rank again: `lumikit trace collectives DIR` should show no rank last at most collectives "
        "and smaller waits", ["collectives", "critical path"])


def rank_wait_us(matched: dict, e: RankEvidence) -> float:
    """The time rank ``e.rank`` waited in collectives over its analysed steps: its waits over the whole trace,
    spread evenly over the profiled steps."""
    total = sum(m["wait_us"].get(e.rank, m["wait_us"].get(str(e.rank), 0.0)) for m in matched["matched"])
    return total * e.steps / e.all_steps


def rule_mismatch(matched: dict) -> Finding | None:
    if not matched.get("mismatches"):
        return None
    x = matched["mismatches"][0]
    return Finding(
        "collective_mismatch", "high", "Ranks call different collectives at the same point",
        [f"collectives: {len(matched['mismatches'])} mismatches; first {x['group']}#{x['index']}: {x['field']} "
         f"differs by rank {x['values']}"],
        None, "make every rank run the same collectives in the same order with the same sizes (no rank-dependent "
              "branches around all_reduce/barrier; equal batch counts per rank: DistributedSampler, drop_last=True)",
        "`lumikit trace collectives DIR` reports no mismatch; TORCH_NCCL_DESYNC_DEBUG=1 names the rank in a hang",
        ["collectives"], first=True)


# -- the GPU record, logs and the health check -------------------------------------------------------------
def record_findings(folder: Path) -> tuple[list[Finding], str | None]:
    """Idle GCDs and VRAM near full from the run's GPU record card (and where it came from)."""
    from ..record.card import card_of_run

    card = card_of_run(folder)
    if card.absent:
        return [], f"no GPU record: {card.absent.splitlines()[0]}"
    out = []
    idle = [f for f in card.findings if f.get("kind") == "idle"]
    if idle:
        f = idle[0]
        out.append(Finding(
            "idle_gcds", "high", "Allocated GCDs stay idle",
            [f"record card: {f['node']}: {f['message']}"], None,
            "use every GCD you pay for (one task per GCD: --ntasks-per-node=8 --gpus-per-node=8 on standard-g and "
            "DDP), or ask for fewer (small-g, --gpus-per-node=N); billing counts allocated GCDs, busy or not",
            "`lumikit report RUN`: every GCD busy in the record", ["record card"]))
    full = [r for r in card.rows if r.vram_peak_pct is not None and r.vram_peak_pct >= 95.0]
    if full:
        r = full[0]
        out.append(Finding(
            "vram_full", "medium", "VRAM is nearly full",
            [f"record card: {r.node} GCD {r.gcd} peaked at {r.vram_peak_pct:.0f} % of its memory "
             f"({r.vram_peak_gib} GiB)"], None,
            "leave headroom before raising the batch: activation checkpointing, bf16 autocast (--precision bf16), "
            "a smaller --batch-size with gradient accumulation, or FSDP/ZeRO across GCDs; "
            "PYTORCH_HIP_ALLOC_CONF=expandable_segments:True against fragmentation",
            "`lumikit report RUN`: the VRAM peak below 90 %; `lumikit trace memory` for the largest allocations",
            ["record card"]))
    busy = [r.busy_mean_pct for r in card.rows if r.busy_mean_pct is not None]
    if busy and not idle and max(busy) < 50:
        out.append(Finding(
            "waiting_gcds", "medium", "The GCDs are busy less than half the time",
            [f"record card: mean busy {min(busy):.0f}-{max(busy):.0f} % over the GCDs"], None,
            "trace a few steps (lumikit run ... --profile torch) and read `lumikit trace idle` for why they wait",
            "`lumikit report RUN`: busy % up", ["record card"]))
    return out, "GPU record card"


def log_findings(folder: Path) -> list[Finding]:
    """The RCCL socket fallback (and other network problems) from the log doctor."""
    from ..logs.doctor import diagnose

    out = []
    for d in diagnose(folder):
        if d.signature == "rccl-socket-fallback":
            out.append(Finding(
                "rccl_socket", "high", "RCCL talks over TCP sockets, not Slingshot",
                [f"log doctor: {d.file}:{d.line_no}: {d.line[:120]}"], None,
                d.fix + " (for a self-built container: module load the aws-ofi-rccl plugin or bind it in)",
                "the job's log (NCCL_DEBUG=INFO; lumikit run --profile rccl-debug) shows 'NET/OFI Using "
                "aws-ofi-rccl' and 'Selected Provider is cxi'; `lumikit doctor RUN` finds nothing", ["doctor"],
                first=True))
    return out


def health_findings(trace: Any) -> tuple[list[Finding], str | None]:
    """Dropped kernels from the trace health check (``lumikit trace check``, :mod:`lumikit.trace.health`); a note
    where this checkout does not have it yet."""
    try:
        from ..trace.health import check_trace  # type: ignore[attr-defined]
    except ImportError:
        return [], ("the trace health check (lumikit.trace.health, `lumikit trace check`) is not in this checkout: "
                    "dropped kernels are not checked")
    report = check_trace(trace, files=False)
    out = []
    for f in report.get("findings", []):
        if f.get("kind") == "lost_kernels" and f.get("severity") == "warning":
            out.append(Finding(
                "lost_kernels", "high", "The trace lost kernels: its numbers undercount the GPU",
                [f"trace check: rank {f.get('rank')}: {f.get('evidence')}"], None,
                f.get("fix") or "record fewer steps or a smaller window (torch.profiler schedule active=2) so the "
                                "profiler's buffers hold every kernel",
                "`lumikit trace check` reports no lost kernels before trusting the other findings", ["trace check"],
                first=True))
    return out, None
