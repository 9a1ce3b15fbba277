"""A small causal language model fine-tuned on the shipped movie reviews: the course's GPT-neo/IMDb run, scaled down.

A GPT-style transformer in plain PyTorch (token + position embeddings, pre-norm blocks with causal self-attention
and an MLP, tied output head) over bytes, so no tokenizer has to be downloaded. The ``tiny`` size trains a few
steps a second on a laptop CPU; ``medium`` gives a GPU something to do.

    python -m lumikit.workloads.lm --steps 20
    torchrun --nproc-per-node=2 -m lumikit.workloads.lm --mode ddp --steps 20
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ContextManager, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import SpecError
from .common import base_parser, print0
from .corpus import load_corpus
from .trainer import Setup, StepOutput, Task, main_for

VOCAB = 256  # bytes


@dataclass(frozen=True)
class GPTConfig:
    """The shape of the transformer."""

    layers: int
    width: int
    heads: int
    context: int
    vocab: int = VOCAB


SIZES: dict[str, GPTConfig] = {
    "tiny": GPTConfig(layers=2, width=64, heads=2, context=64),
    "small": GPTConfig(layers=4, width=128, heads=4, context=128),
    "medium": GPTConfig(layers=8, width=384, heads=6, context=256),
}


class Block(nn.Module):
    """Pre-norm transformer block: causal self-attention, then a 4x MLP, each with a residual."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.heads = cfg.heads
        self.norm1 = nn.LayerNorm(cfg.width)
        self.qkv = nn.Linear(cfg.width, 3 * cfg.width)
        self.proj = nn.Linear(cfg.width, cfg.width)
        self.norm2 = nn.LayerNorm(cfg.width)
        self.mlp = nn.Sequential(nn.Linear(cfg.width, 4 * cfg.width), nn.GELU(), nn.Linear(4 * cfg.width, cfg.width))

    def forward(self, x: torch.Tensor, cache: "LayerCache | None" = None) -> torch.Tensor:
        """``x`` (batch x time x width); with ``cache``, the keys and values of earlier positions come from it and
        this call's are appended (a prompt from position 0, or one new position at a time)."""
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        causal = True
        if cache is not None:
            start = cache.length
            if start and t != 1:
                raise ValueError("a KV cache takes a prompt at position 0, then one position per call")
            k, v = cache.append(k, v)
            causal = start == 0  # one new position attends to every cached one
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=causal and t > 1)
        x = x + self.proj(attn.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.norm2(x))


class TinyGPT(nn.Module):
    """A GPT-style causal language model over bytes."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tokens = nn.Embedding(cfg.vocab, cfg.width)
        self.positions = nn.Embedding(cfg.context, cfg.width)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.norm = nn.LayerNorm(cfg.width)
        self.head = nn.Linear(cfg.width, cfg.vocab, bias=False)
        self.head.weight = self.tokens.weight  # tied, as in GPT-2
        self.apply(self._init)

    @staticmethod
    def _init(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx: torch.Tensor, cache: "KVCache | None" = None) -> torch.Tensor:
        """Logits of the next byte at every position of ``idx`` (batch x time); with ``cache`` (inference), ``idx``
        continues the positions the cache holds, and their keys and values are not computed again."""
        start = cache.length if cache is not None else 0
        positions = torch.arange(start, start + idx.shape[1], device=idx.device)
        x = self.tokens(idx) + self.positions(positions)
        for i, block in enumerate(self.blocks):
            x = block(x, cache.layers[i] if cache is not None else None)
        return self.head(self.norm(x))


class LayerCache:
    """One block's keys and values of the positions seen so far, in tensors allocated once for ``capacity``."""

    def __init__(self, batch: int, heads: int, capacity: int, head_dim: int, *, dtype: torch.dtype,
                 device: torch.device) -> None:
        self.keys = torch.zeros(batch, heads, capacity, head_dim, dtype=dtype, device=device)
        self.values = torch.zeros_like(self.keys)
        self.length = 0

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store this call's keys and values after the earlier ones; returns all of them."""
        end = self.length + k.shape[2]
        if end > self.keys.shape[2]:
            raise ValueError(f"the KV cache holds {self.keys.shape[2]} positions, {end} were asked for")
        self.keys[:, :, self.length:end] = k
        self.values[:, :, self.length:end] = v
        self.length = end
        return self.keys[:, :, :end], self.values[:, :, :end]


class KVCache:
    """The keys and values of every block, so that decoding one more token costs one position, not all of them."""

    def __init__(self, model: TinyGPT, batch: int, capacity: int) -> None:
        cfg = model.cfg
        weight = model.tokens.weight
        dtype = weight.dtype
        if torch.is_autocast_enabled(weight.device.type):  # keys and values come out of autocast's matmuls
            dtype = torch.get_autocast_dtype(weight.device.type)
        self.layers = [LayerCache(batch, cfg.heads, capacity, cfg.width // cfg.heads, dtype=dtype,
                                  device=weight.device) for _ in range(cfg.layers)]

    @property
    def length(self) -> int:
        """Positions held so far."""
        return self.layers[0].length

    @property
    def nbytes(self) -> int:
        """Memory the cache takes (allocated at its full capacity): 2 x layers x batch x positions x width."""
        return sum(layer.keys.nbytes + layer.values.nbytes for layer in self.layers)


def encode(text: str) -> torch.Tensor:
    """Text to byte ids."""
    return torch.tensor(list(text.encode("utf-8")), dtype=torch.long)


def decode(ids: Sequence[int]) -> str:
    """Byte ids to text (undecodable bytes replaced)."""
    return bytes(int(i) for i in ids).decode("utf-8", errors="replace")


class TextWindows(torch.utils.data.Dataset):
    """Non-overlapping windows of ``context + 1`` bytes: input is the first ``context``, target the last."""

    def __init__(self, ids: torch.Tensor, context: int) -> None:
        self.ids = ids
        self.context = context

    def __len__(self) -> int:
        return (len(self.ids) - 1) // self.context

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        chunk = self.ids[i * self.context: (i + 1) * self.context + 1]
        return chunk[:-1], chunk[1:]


@torch.no_grad()
def sample(model: TinyGPT, prompt: str, new_tokens: int, *, seed: int = 0, temperature: float = 0.8,
           top_k: int = 20) -> str:
    """Continue ``prompt`` by ``new_tokens`` bytes, sampling from the top-k of each prediction (seeded)."""
    model.eval()
    device = next(model.parameters()).device
    generator = torch.Generator(device="cpu").manual_seed(seed)
    idx = encode(prompt).unsqueeze(0).to(device)
    for _ in range(new_tokens):
        logits = model(idx[:, -model.cfg.context:])[0, -1].float().cpu() / temperature
        top = torch.topk(logits, top_k)
        probs = torch.softmax(top.values, dim=0)
        choice = top.indices[torch.multinomial(probs, 1, generator=generator)]
        idx = torch.cat([idx, choice.view(1, 1).to(device)], dim=1)
    return decode(idx[0].tolist())


def _forward(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor], device: torch.device) -> StepOutput:
    inputs, targets = (t.to(device, non_blocking=True) for t in batch)
    logits = model(inputs)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    return StepOutput(loss=loss, samples=inputs.shape[0])


def build_task(args: argparse.Namespace, setup: Setup) -> Task:
    """The language-model task for the trainer: model of ``--model-size``, windows of the shipped corpus."""
    cfg = SIZES[args.model_size]
    context = args.context or cfg.context
    if not 8 <= context <= cfg.context:
        raise SpecError("--context", f"{context} bytes is outside 8..{cfg.context} for this model size",
                        f"give --context between 8 and {cfg.context}, or a larger --model-size")
    text = load_corpus(args.corpus)
    dataset = TextWindows(encode(text), context)
    model = TinyGPT(cfg)
    return Task(name="lm", model=model, dataset=dataset,
                make_optimizer=lambda params, lr, **options: torch.optim.AdamW(params, lr=lr, weight_decay=0.01,
                                                                               **options),
                forward=_forward, info={"dataset": str(args.corpus or "shipped reviews"),
                                        "dataset_bytes": len(text.encode("utf-8")), "context": context,
                                        "perplexity_hint": "exp(loss)"})


def parser() -> argparse.ArgumentParser:
    """The command line of ``python -m lumikit.workloads.lm``."""
    p = base_parser("lumikit.workloads.lm", "Fine-tune a tiny GPT-style model on the shipped movie reviews.",
                    sizes=list(SIZES), lr=1e-3, batch_size=8)
    p.add_argument("--context", type=int, default=None, help="bytes per training window (default: the model's)")
    p.add_argument("--corpus", default=None, help="a text file to train on instead of the shipped reviews")
    p.add_argument("--sample-tokens", type=int, default=0, metavar="N",
                   help="at the end, print a sampled review of N bytes on rank 0")
    g = p.add_argument_group("inference (--generate)")
    g.add_argument("--generate", action="store_true",
                   help="measure greedy generation: prefill and decode tokens/s and memory, with and without a KV "
                        "cache, per batch size. Alone: random weights (seeded), or the weights of --checkpoint; "
                        "with --steps/--epochs: after training. Prefill and decode run in --precision (autocast; the KV cache "
                        "in that precision too)")
    g.add_argument("--batch-sizes", default="1,4,16", metavar="B,B,...", help="batch sizes to generate with")
    g.add_argument("--prompt-tokens", type=int, default=32, metavar="N", help="prompt length in bytes (default 32)")
    g.add_argument("--new-tokens", type=int, default=32, metavar="N", help="tokens to generate (default 32)")
    g.add_argument("--generate-repeats", type=int, default=5, metavar="K",
                   help="timed generations per row; the table shows their medians (default 5)")
    return p


def _batch_sizes(text: str) -> list[int]:
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not parts or not all(part.isdigit() and int(part) > 0 for part in parts):
        raise SpecError("--batch-sizes", f"cannot read {text!r}", "give positive integers separated by commas, "
                        "e.g. 1,4,16")
    return [int(part) for part in parts]


def generate_precision(precision: str, device: torch.device, say: Callable[[str], None] = print
                       ) -> tuple[str, ContextManager]:
    """The precision generation runs in and its autocast context (prefill and decode alike): ``precision`` where it
    can work on ``device``, else fp32 after the same one line the training knobs print."""
    from .knobs import Applied, precision_support

    why = precision_support(precision, device)
    if why:
        say(f"--precision {precision}: {why}; running in fp32")
        precision = "fp32"
    return precision, Applied(precision=precision, device_type=device.type).autocast()


def run_generate(model: TinyGPT, args: argparse.Namespace, setup: Setup) -> list:
    """The inference table of ``model`` on rank 0, printed and written to ``generate.json`` in the output folder."""
    from .common import default_out_dir, device_name, write_json_atomic
    from .generate import measure, table

    if not setup.env.is_main:
        return []
    precision, autocast = generate_precision(args.precision, setup.device, say=lambda line: print0(setup.env, line))
    with autocast:
        rows = measure(model, encode(load_corpus(args.corpus)), batch_sizes=_batch_sizes(args.batch_sizes),
                       prompt_tokens=args.prompt_tokens, new_tokens=args.new_tokens, repeats=args.generate_repeats)
    kind = "GPU" if setup.device.type == "cuda" else "CPU"
    measured_on = f"this {kind} ({device_name(setup.device)}), {precision}"
    print0(setup.env, table(rows, measured_on))
    out = Path(args.out) if args.out is not None else default_out_dir()
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "generate.json", {"model_size": args.model_size, "measured_on": measured_on,
                                              "precision": precision,
                                              "weights": args.weights_were, "rows": [r.to_dict() for r in rows]})
    return rows


def _after_training(task: Task, args: argparse.Namespace, setup: Setup) -> None:
    if args.sample_tokens > 0 and setup.env.is_main:
        text = sample(task.model, "I loved every minute of", args.sample_tokens, seed=args.seed)
        print0(setup.env, "sample: " + text.replace("\n", " | "))
    if args.generate:
        args.weights_were = "trained here"
        run_generate(task.model, args, setup)


def _generate_only(args: argparse.Namespace, prog: str) -> int:
    """--generate without training: the seeded random model, or the weights of --checkpoint."""
    from ..errors import LumikitError
    from .checkpoint import load_checkpoint
    from .trainer import finish, setup_process

    setup = None
    try:
        setup = setup_process(args)
        torch.manual_seed(args.seed)
        model = TinyGPT(SIZES[args.model_size])
        args.weights_were = f"random (seed {args.seed})"
        if args.checkpoint is not None:
            state = load_checkpoint(args.checkpoint)
            saved = state.get("meta", {}).get("model_size")
            if state.get("meta", {}).get("workload") != "lm" or saved != args.model_size:
                raise SpecError("--checkpoint", f"{args.checkpoint} holds no lm {args.model_size} model (saved: "
                                f"{state.get('meta', {}).get('workload')} {saved})",
                                "give the --model-size of the training run, or its checkpoint")
            model.load_state_dict(state["model"])
            args.weights_were = f"from {args.checkpoint}"
        run_generate(model.to(setup.device), args, setup)
    except LumikitError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr, flush=True)
        return 2
    finally:
        if setup is not None:
            finish(setup)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Train, then (with --sample-tokens) print a sampled review, as the course's run does at its end; with
    --generate, measure inference (alone, or after training when --steps/--epochs are given)."""
    p = parser()
    args = p.parse_args(argv)
    if args.generate and args.steps is None and args.epochs is None:
        return _generate_only(args, p.prog)
    return main_for(build_task, p, argv, after=_after_training)


if __name__ == "__main__":
    sys.exit(main())
