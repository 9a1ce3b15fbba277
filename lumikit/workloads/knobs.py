"""The speed knobs of the course workloads: precision (autocast, a gradient scaler for fp16), channels-last,
torch.compile, fused optimizers and ROCm's TunableOp.

Each knob is asked for on the command line (:func:`add_knob_options`) and switched on by :func:`apply_knobs`,
which first checks that it can work where the run is: a knob that cannot (no C compiler for inductor, no bf16 on
this CPU, fp16 autocast on a CPU, TunableOp without ROCm, channels-last on a model without convolutions) says so
in one line and the run goes on without it. What took effect is kept in :class:`Applied` (and in result.json), so
a measured number always says which knobs were really on.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ContextManager, Sequence

import torch
from torch import nn

PRECISIONS = ("fp32", "bf16", "fp16")
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
#: The TunableOp results file in the run folder (torch replaces %d with the device index).
TUNABLEOP_FILE = "tunableop_results%d.csv"


def add_knob_options(p: argparse.ArgumentParser) -> None:
    """The knobs, in every workload's --help."""
    g = p.add_argument_group("speed knobs (each says in one line when it cannot work here, and the run goes on "
                             "without it)")
    g.add_argument("--precision", choices=PRECISIONS, default="fp32",
                   help="autocast the forward pass to bf16 or fp16 (fp16 adds a gradient scaler); default fp32")
    g.add_argument("--channels-last", action="store_true",
                   help="store convolution weights and images as NHWC (channels last); models without "
                        "convolutions (the language model) say it does nothing there")
    g.add_argument("--compile", nargs="?", const="default", default=None, choices=COMPILE_MODES, metavar="MODE",
                   help="torch.compile the model (inductor); MODE is one of " + ", ".join(COMPILE_MODES)
                        + " (default: default)")
    g.add_argument("--fused-optimizer", action="store_true",
                   help="the optimizer's fused implementation (one kernel for all parameters)")
    g.add_argument("--tunableop", action="store_true",
                   help="ROCm's TunableOp: tune each GEMM once (PYTORCH_TUNABLEOP_ENABLED), results kept in the "
                        f"run folder ({TUNABLEOP_FILE.replace('%', '%%')}); without ROCm it says it does nothing here")


@dataclass(frozen=True)
class Knobs:
    """What the command line asked for."""

    precision: str = "fp32"
    channels_last: bool = False
    compile: str | None = None
    fused_optimizer: bool = False
    tunableop: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "Knobs":
        return cls(precision=getattr(args, "precision", "fp32"), channels_last=getattr(args, "channels_last", False),
                   compile=getattr(args, "compile", None), fused_optimizer=getattr(args, "fused_optimizer", False),
                   tunableop=getattr(args, "tunableop", False))


@dataclass
class Applied:
    """What took effect, and the one-line notes on what did not."""

    precision: str = "fp32"
    channels_last: bool = False
    compile: str | None = None
    fused_optimizer: bool = False
    tunableop_file: str | None = None
    notes: list[str] = field(default_factory=list)
    device_type: str = "cpu"
    scaler: Any = None  # torch.amp.GradScaler for fp16

    def autocast(self) -> ContextManager:
        """The forward pass's autocast context (nothing in fp32)."""
        if self.precision == "fp32":
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device_type, dtype=DTYPES[self.precision])

    def backward_and_step(self, loss: torch.Tensor, optimizer: torch.optim.Optimizer) -> None:
        """``loss.backward(); optimizer.step()``, through the gradient scaler in fp16."""
        if self.scaler is None:
            loss.backward()
            optimizer.step()
            return
        self.scaler.scale(loss).backward()
        self.scaler.step(optimizer)
        self.scaler.update()

    def to_dict(self) -> dict[str, Any]:
        return {"precision": self.precision, "channels_last": self.channels_last, "compile": self.compile,
                "fused_optimizer": self.fused_optimizer, "tunableop_file": self.tunableop_file,
                "notes": list(self.notes)}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip().rstrip(":")


def precision_support(precision: str, device: torch.device) -> str | None:
    """None when ``precision`` can run on ``device``; else why not (one clause)."""
    if precision == "fp32":
        return None
    if device.type == "cpu":
        if precision == "fp16":
            return "fp16 autocast is for GPUs (their fp16 matrix units); on this CPU it would only be slower"
        if not torch.backends.mkldnn.is_available() or not torch.ops.mkldnn._is_mkldnn_bf16_supported():
            return "this CPU has no native bf16 (no AVX512-BF16 or AMX): autocast would only emulate it"
        return None
    if precision == "bf16" and not torch.cuda.is_bf16_supported():
        return f"{torch.cuda.get_device_name(device)} has no bf16 support"
    return None


def compiler_support(device: torch.device) -> str | None:
    """None when inductor has what it needs on ``device`` (a C++ compiler on the CPU, Triton on a GPU); else why
    not. A compile can still fail later on an unusual model: :class:`CompileOrEager` catches that."""
    if device.type == "cpu":
        import torch._inductor.config as inductor_config

        names = [c for c in inductor_config.cpp.cxx if c] or ["g++"]
        if not any(shutil.which(name) for name in names):
            return f"inductor finds no C++ compiler ({', '.join(names)} not on PATH; set CXX or load a compiler)"
        return None
    try:
        import triton  # noqa: F401
    except ImportError:
        return "inductor needs Triton for GPU kernels and this Python has none"
    return None


class CompileOrEager(nn.Module):
    """The compiled model, or the eager one when compiling fails at the first call (the compile happens lazily):
    one line says why, and training goes on eagerly."""

    def __init__(self, model: nn.Module, mode: str, say: Callable[[str], None], applied: Applied) -> None:
        super().__init__()
        self.eager = model
        # not a registered submodule: the parameters keep one name each (eager.*)
        object.__setattr__(self, "compiled", torch.compile(model, mode=None if mode == "default" else mode))
        self._say, self._applied, self._tried = say, applied, False

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if self._tried:
            return (self.compiled if self._applied.compile else self.eager)(*args, **kwargs)
        self._tried = True
        try:
            return self.compiled(*args, **kwargs)
        except Exception as exc:  # inductor's failures have many types; each becomes one line, then eager
            self._applied.compile = None
            line = f"--compile: compiling failed ({_first_line(exc)}); running without it"
            self._applied.notes.append(line)
            self._say(line)
            return self.eager(*args, **kwargs)


def tunableop_support() -> str | None:
    """None on a ROCm build of torch with a GPU; else why TunableOp does nothing here."""
    if torch.version.hip is None:
        return "TunableOp tunes ROCm's GEMMs (hipBLASLt/rocBLAS) and this torch is not a ROCm build"
    if not torch.cuda.is_available():
        return "TunableOp tunes GPU GEMMs and torch sees no GPU here"
    return None


def enable_tunableop(out_dir: Path) -> str:
    """Switch TunableOp on with its results file in ``out_dir`` (torch writes it when the process ends, the
    device index in its name); the variables go to child processes too. Returns the name pattern (%d: device)."""
    pattern = str(Path(out_dir) / TUNABLEOP_FILE)
    os.environ["PYTORCH_TUNABLEOP_ENABLED"] = "1"
    os.environ["PYTORCH_TUNABLEOP_FILENAME"] = pattern
    torch.cuda.tunable.enable(True)
    torch.cuda.tunable.tuning_enable(True)
    torch.cuda.tunable.set_filename(pattern.replace("%d", ""), insert_device_ordinal=True)
    return pattern


def apply_knobs(knobs: Knobs, model: nn.Module, device: torch.device, *, out_dir: Path, convolutional: bool,
                say: Callable[[str], None] = print) -> tuple[nn.Module, Applied]:
    """Switch on what can work here (model already on ``device``); returns the model to train and what took
    effect. Every knob that cannot work says why in one line through ``say``."""
    applied = Applied(device_type=device.type)

    def note(line: str) -> None:
        applied.notes.append(line)
        say(line)

    why = precision_support(knobs.precision, device)
    if why:
        note(f"--precision {knobs.precision}: {why}; running in fp32")
    else:
        applied.precision = knobs.precision
        if knobs.precision == "fp16":
            applied.scaler = torch.amp.GradScaler(device.type)
    if knobs.channels_last:
        if convolutional:
            model = model.to(memory_format=torch.channels_last)
            applied.channels_last = True
        else:
            note("--channels-last: this model has no convolutions, so channels-last does nothing here")
    if knobs.tunableop:
        why = tunableop_support()
        if why:
            note(f"--tunableop: {why}, so it does nothing here")
        else:
            applied.tunableop_file = enable_tunableop(out_dir)
    if knobs.fused_optimizer:
        applied.fused_optimizer = True  # checked when the optimizer is built (make_optimizer)
    if knobs.compile:
        why = compiler_support(device)
        if why:
            note(f"--compile: {why}; running without it")
        else:
            applied.compile = knobs.compile
            model = CompileOrEager(model, knobs.compile, say, applied)
    return model, applied


def make_optimizer(factory: Callable[..., torch.optim.Optimizer], params: Sequence[nn.Parameter], lr: float,
                   applied: Applied, say: Callable[[str], None] = print) -> torch.optim.Optimizer:
    """The workload's optimizer, fused when asked and possible (else one line and the default implementation)."""
    params = list(params)
    if applied.fused_optimizer:
        try:
            return factory(params, lr, fused=True)
        except (RuntimeError, ValueError, TypeError) as exc:
            applied.fused_optimizer = False
            line = f"--fused-optimizer: no fused implementation here ({_first_line(exc)}); using the default one"
            applied.notes.append(line)
            say(line)
    return factory(params, lr)


def unwrap_compiled(model: nn.Module) -> nn.Module:
    """The eager model inside a :class:`CompileOrEager` (its state dict has the plain parameter names)."""
    return model.eager if isinstance(model, CompileOrEager) else model
