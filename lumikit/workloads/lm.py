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
from typing import Sequence

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

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
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

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Logits of the next byte at every position of ``idx`` (batch x time)."""
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.tokens(idx) + self.positions(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


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
    return p


def _print_sample(task: Task, args: argparse.Namespace, setup: Setup) -> None:
    if args.sample_tokens > 0 and setup.env.is_main:
        text = sample(task.model, "I loved every minute of", args.sample_tokens, seed=args.seed)
        print0(setup.env, "sample: " + text.replace("\n", " | "))


def main(argv: Sequence[str] | None = None) -> int:
    """Train, then (with --sample-tokens) print a sampled review, as the course's run does at its end."""
    return main_for(build_task, parser(), argv, after=_print_sample)


if __name__ == "__main__":
    sys.exit(main())
