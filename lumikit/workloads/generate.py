"""Inference with the language model: greedy generation with and without a KV cache, timed as prefill (the prompt,
all positions at once) and decode (one new token per step), across batch sizes.

Without a cache every decode step runs the whole sequence again; with one, a step runs one position and reads the
cached keys and values. Decode does little arithmetic per byte of weights it reads, so it is bound by memory
traffic: a larger batch reads the same weights once for more rows, which is what raises tokens/s (and what vLLM's
continuous batching exploits). The model is the workload's own (random or trained weights): nothing is downloaded.

    python -m lumikit.workloads.lm --generate --batch-sizes 1,4,16
"""
from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass
from typing import Sequence

import torch

from ..errors import SpecError
from .lm import KVCache, TinyGPT


@dataclass(frozen=True)
class GenerateRow:
    """One batch size, with or without the cache: rates (tokens/s over the whole batch) and memory."""

    batch: int
    kv_cache: bool
    prompt_tokens: int
    new_tokens: int
    prefill_tokens_per_s: float
    decode_tokens_per_s: float
    kv_cache_bytes: int  # 0 without a cache
    peak_memory_bytes: int | None  # GPU allocator peak; None on a CPU

    def to_dict(self) -> dict:
        return asdict(self)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@torch.no_grad()
def greedy(model: TinyGPT, prompt: torch.Tensor, new_tokens: int, *, kv_cache: bool
           ) -> tuple[torch.Tensor, float, float, int]:
    """Continue ``prompt`` (batch x positions) by ``new_tokens`` greedy tokens; returns the new tokens, the prefill
    seconds (the prompt, giving the first new token), the decode seconds (the other new tokens) and the cache's
    bytes (0 without one)."""
    model.eval()
    device = prompt.device
    batch, length = prompt.shape
    if length + new_tokens > model.cfg.context:
        raise SpecError("--prompt-tokens/--new-tokens", f"{length} + {new_tokens} positions exceed the model's "
                        f"context of {model.cfg.context}", "use fewer tokens or a larger --model-size")
    cache = KVCache(model, batch, length + new_tokens) if kv_cache else None
    _sync(device)
    start = time.perf_counter()
    logits = model(prompt, cache)
    token = logits[:, -1].argmax(dim=-1, keepdim=True)
    _sync(device)
    prefill = time.perf_counter() - start
    out = [token]
    sequence = torch.cat([prompt, token], dim=1)
    start = time.perf_counter()
    for _ in range(new_tokens - 1):
        logits = model(token, cache) if cache is not None else model(sequence)
        token = logits[:, -1].argmax(dim=-1, keepdim=True)
        out.append(token)
        if cache is None:
            sequence = torch.cat([sequence, token], dim=1)
    _sync(device)
    decode = time.perf_counter() - start
    return torch.cat(out, dim=1), prefill, decode, cache.nbytes if cache is not None else 0


def prompts(ids: torch.Tensor, batch: int, length: int, device: torch.device) -> torch.Tensor:
    """``batch`` different prompts of ``length`` bytes: consecutive windows of the corpus (repeated if short)."""
    need = batch * length
    reps = -(-need // max(len(ids), 1))
    return ids.repeat(reps)[:need].view(batch, length).to(device)


def measure(model: TinyGPT, ids: torch.Tensor, *, batch_sizes: Sequence[int], prompt_tokens: int, new_tokens: int,
            repeats: int = 3) -> list[GenerateRow]:
    """Both rows (KV cache, then none) per batch size: medians of ``repeats`` timed generations after one
    untimed."""
    if new_tokens < 2 or prompt_tokens < 1 or repeats < 1 or not batch_sizes or min(batch_sizes) < 1:
        raise SpecError("--generate", "needs at least 1 prompt token, 2 new tokens, 1 repeat and batch sizes of 1 "
                        "or more", "e.g. --batch-sizes 1,4,16 --prompt-tokens 32 --new-tokens 32")
    device = next(model.parameters()).device
    rows = []
    for batch in batch_sizes:
        prompt = prompts(ids, batch, prompt_tokens, device)
        for kv_cache in (True, False):
            greedy(model, prompt, new_tokens, kv_cache=kv_cache)  # untimed: first-call costs stay out
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)
            runs = [greedy(model, prompt, new_tokens, kv_cache=kv_cache) for _ in range(repeats)]
            prefill = statistics.median(r[1] for r in runs)
            decode = statistics.median(r[2] for r in runs)
            rows.append(GenerateRow(
                batch=batch, kv_cache=kv_cache, prompt_tokens=prompt_tokens, new_tokens=new_tokens,
                prefill_tokens_per_s=batch * prompt_tokens / prefill,
                decode_tokens_per_s=batch * (new_tokens - 1) / decode, kv_cache_bytes=runs[0][3],
                peak_memory_bytes=torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None))
    return rows


def table(rows: Sequence[GenerateRow], measured_on: str) -> str:
    """The rows as text, with what they were measured on and what to read from them."""
    lines = [f"Inference, greedy, measured on {measured_on}: prefill = the prompt in one pass; decode = one new "
             "token per step (tokens/s over the whole batch)",
             f"{'batch':>5}  {'KV cache':<8}  {'prefill tok/s':>13}  {'decode tok/s':>12}  {'KV cache memory':>15}  "
             "peak memory"]
    for r in rows:
        peak = f"{r.peak_memory_bytes / 2 ** 20:.1f} MiB" if r.peak_memory_bytes is not None else "n/a (CPU)"
        lines.append(f"{r.batch:>5}  {'yes' if r.kv_cache else 'no':<8}  {r.prefill_tokens_per_s:>13.0f}  "
                     f"{r.decode_tokens_per_s:>12.0f}  {r.kv_cache_bytes / 2 ** 10:>11.1f} KiB  {peak}")
    cached = [r for r in rows if r.kv_cache]
    if len(cached) > 1:
        lo, hi = cached[0], cached[-1]
        lines.append(f"decode with the cache: batch {hi.batch} gives {hi.decode_tokens_per_s / lo.decode_tokens_per_s:.1f}x "
                     f"the tokens/s of batch {lo.batch} (the weights are read once per step for every row)")
    return "\n".join(lines)
