"""What a model should need before it runs, and how a measured run compares: memory per GCD and FLOP utilisation.

:func:`estimate_model` takes any ``torch.nn.Module`` and an example batch and counts, without a GPU and without
doing the arithmetic (the model is copied to PyTorch's ``meta`` device, where tensors have shapes but no data):

- parameters, their gradients and the optimizer's state (SGD with momentum keeps 1 value per parameter,
  Adam/AdamW 2), in the parameters' precision;
- activations: the tensors autograd saves in the forward pass for the backward pass, summed (each once);
- FLOPs of one training step (forward and backward) with PyTorch's ``FlopCounterMode`` (matrix products and
  convolutions, 2 FLOPs per multiply-add).

:func:`compare` then sets a measured step time and peak memory against the estimate: model FLOP utilisation (MFU)
against one GCD's peak and the fraction of a GCD's 64 GiB, with the peak figures and their source from the site
profile (``[hardware]``). The course workloads have a shortcut, :func:`estimate_workload`.
"""
from __future__ import annotations

import copy
from dataclasses import asdict, dataclass
from typing import Any

from .errors import LumikitError
from .site import Site, load_site

GiB = 2 ** 30  # a GCD's HBM is 64 GiB (128 GiB per MI250X): memory is counted in GiB throughout, as PyTorch does


@dataclass(frozen=True)
class ModelEstimate:
    """Memory and FLOPs of one training step of a model on one device (bytes and FLOPs, not rounded)."""

    name: str
    batch_size: int
    parameters: int
    trainable: int
    parameter_bytes: int
    gradient_bytes: int
    optimizer_bytes: int
    optimizer: str
    activation_bytes: int
    forward_flops: int
    step_flops: int  # forward + backward

    @property
    def total_bytes(self) -> int:
        """Parameters + gradients + optimizer state + activations (the allocator's overhead comes on top)."""
        return self.parameter_bytes + self.gradient_bytes + self.optimizer_bytes + self.activation_bytes

    def gcd_fraction(self, site: Site | str | None = "lumi") -> float:
        """The estimated total as a fraction of one GCD's memory (1.0 = exactly full)."""
        return self.total_bytes / (gcd_memory_gb(site) * GiB)

    def rows(self) -> list[tuple[str, float, str]]:
        """(what, value, unit) rows for a table."""
        return [("parameters", self.parameters / 1e6, "million"),
                ("parameter memory", self.parameter_bytes / GiB, "GiB"),
                ("gradients", self.gradient_bytes / GiB, "GiB"),
                (f"optimizer state ({self.optimizer})", self.optimizer_bytes / GiB, "GiB"),
                (f"activations (batch {self.batch_size})", self.activation_bytes / GiB, "GiB"),
                ("total", self.total_bytes / GiB, "GiB"),
                ("forward FLOPs per sample", self.forward_flops / max(self.batch_size, 1) / 1e9, "GFLOP"),
                ("FLOPs per training step", self.step_flops / 1e12, "TFLOP")]

    def table(self):
        """The rows as a pandas table (what a notebook shows)."""
        import pandas as pd

        return pd.DataFrame(self.rows(), columns=["what", "value", "unit"]).set_index("what")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "total_bytes": self.total_bytes}


def _hardware(site: Site | str | None) -> dict[str, Any]:
    s = load_site(site)
    hw = dict(s.hardware)
    if not hw:
        raise LumikitError(f"site {s.name} has no [hardware] table with the GCD's peak figures; use site 'lumi'")
    return hw


def gcd_memory_gb(site: Site | str | None = "lumi") -> float:
    """One GCD's memory in GiB, from the site profile (64 on LUMI)."""
    return float(_hardware(site).get("gcd_hbm_gb", load_site(site).node.gcd_memory_gb))


def gcd_peak_flops(precision: str = "fp32_matrix", site: Site | str | None = "lumi") -> float:
    """One GCD's peak FLOP/s for ``precision`` (bf16, fp16, fp32_matrix, fp32, fp64), from the site profile."""
    peaks = _hardware(site).get("gcd_peak_tflops", {})
    if precision not in peaks:
        raise LumikitError(f"no peak for precision {precision!r}; use one of: {', '.join(peaks)}")
    return float(peaks[precision]) * 1e12


def optimizer_slots(optimizer: Any) -> tuple[int, str]:
    """Values of optimizer state per parameter, and a name: SGD 0 (1 with momentum), Adam/AdamW 2 (3 with
    amsgrad), RMSprop and Adagrad 1. ``optimizer`` is an instance or a name ("sgd", "sgd-momentum", "adamw" ...)."""
    import torch

    if isinstance(optimizer, str):
        name = optimizer.lower()
        table = {"sgd": 0, "sgd-momentum": 1, "adam": 2, "adamw": 2, "rmsprop": 1, "adagrad": 1, "none": 0}
        if name not in table:
            raise LumikitError(f"unknown optimizer {optimizer!r}; use one of: {', '.join(table)}")
        return table[name], name
    group = optimizer.param_groups[0] if optimizer.param_groups else {}
    if isinstance(optimizer, (torch.optim.Adam, torch.optim.AdamW)):
        return (3 if group.get("amsgrad") else 2), type(optimizer).__name__
    if isinstance(optimizer, torch.optim.SGD):
        return (1 if group.get("momentum", 0) else 0), "SGD" + (" with momentum" if group.get("momentum") else "")
    if isinstance(optimizer, (torch.optim.RMSprop, torch.optim.Adagrad)):
        return 1 + (1 if group.get("momentum", 0) else 0), type(optimizer).__name__
    return 2, f"{type(optimizer).__name__} (assumed 2 values per parameter)"


def _on_meta(module: Any) -> Any:
    """A copy of the module on the meta device (the original is left where it is)."""
    if all(p.device.type == "meta" for p in module.parameters()):
        return module
    return copy.deepcopy(module).to("meta")


def _meta(x: Any) -> Any:
    import torch

    if isinstance(x, torch.Tensor):
        return x.to("meta")
    if isinstance(x, (list, tuple)):
        return type(x)(_meta(v) for v in x)
    if isinstance(x, dict):
        return {k: _meta(v) for k, v in x.items()}
    return x


def _first_tensor(out: Any) -> Any:
    import torch

    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        for v in out:
            t = _first_tensor(v)
            if t is not None:
                return t
    return None


def estimate_model(model: Any, example: Any, *, optimizer: Any = "adamw", name: str | None = None) -> ModelEstimate:
    """Memory and FLOPs of one training step of ``model`` on the batch ``example`` (a tensor, or a tuple of the
    forward's arguments), counted on the meta device: no GPU, no arithmetic, seconds even for ResNet-152."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    params = list(model.parameters())
    trainable = [p for p in params if p.requires_grad]
    param_bytes = sum(p.numel() * p.element_size() for p in params)
    grad_bytes = sum(p.numel() * p.element_size() for p in trainable)
    slots, opt_name = optimizer_slots(optimizer)
    meta_model = _on_meta(model)
    meta_model.train()
    args = _meta(example)
    args = args if isinstance(args, tuple) else (args,)
    batch = next((a.shape[0] for a in args if isinstance(a, torch.Tensor) and a.dim() > 0), 1)
    saved: dict[int, int] = {}
    keep: list[Any] = []
    parameter_ids = {id(p) for p in meta_model.parameters()}

    def pack(t: torch.Tensor) -> torch.Tensor:
        base = t._base if t._base is not None else t  # a view (a weight's transpose) counts as what it views
        if id(base) not in saved and id(base) not in parameter_ids:
            saved[id(base)] = base.numel() * base.element_size()
            keep.append(base)  # keeps the id unique while counting
        return t

    with FlopCounterMode(display=False) as forward_counter:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = meta_model(*args)
    forward_flops = forward_counter.get_total_flops()
    loss = _first_tensor(out)
    if loss is None:
        raise LumikitError(f"{type(model).__name__}'s forward returned no tensor; give a module whose output is "
                           "a tensor (or a tuple/dict holding one)")
    with FlopCounterMode(display=False) as backward_counter:
        if loss.requires_grad:
            loss.float().sum().backward()
    return ModelEstimate(
        name=name or type(model).__name__, batch_size=int(batch), parameters=sum(p.numel() for p in params),
        trainable=sum(p.numel() for p in trainable), parameter_bytes=param_bytes, gradient_bytes=grad_bytes,
        optimizer_bytes=slots * grad_bytes, optimizer=opt_name, activation_bytes=sum(saved.values()),
        forward_flops=int(forward_flops), step_flops=int(forward_flops + backward_counter.get_total_flops()))


def estimate_workload(workload: str, size: str, batch_size: int) -> ModelEstimate:
    """The estimate for a course workload: ``("resnet", "resnet152", 128)`` (CIFAR's 3x32x32 images) or
    ``("lm", "small", 32)`` (windows of the model's context), with the workload's own model and optimizer."""
    import torch

    if workload == "resnet":
        from .workloads.cifar import SHAPE
        from .workloads.resnet import build_model

        with torch.device("meta"):
            model = build_model(size)
        example = torch.empty(batch_size, *SHAPE, device="meta")
        return estimate_model(model, example, optimizer="sgd-momentum", name=f"resnet {size}")
    if workload == "lm":
        from .workloads.lm import SIZES, TinyGPT

        if size not in SIZES:
            raise LumikitError(f"unknown lm size {size!r}; use one of: {', '.join(SIZES)}")
        with torch.device("meta"):
            model = TinyGPT(SIZES[size])
        example = torch.zeros(batch_size, SIZES[size].context, dtype=torch.long, device="meta")
        return estimate_model(model, example, optimizer="adamw", name=f"lm {size}")
    raise LumikitError(f"unknown workload {workload!r}; use resnet or lm")


@dataclass(frozen=True)
class Comparison:
    """A measured run set against its estimate on one GCD."""

    estimate: ModelEstimate
    step_time_s: float
    achieved_flops: float  # FLOP/s
    peak_flops: float
    precision: str
    mfu: float  # achieved / peak
    measured_peak_bytes: float | None
    estimated_fraction_of_gcd: float
    measured_fraction_of_gcd: float | None
    source: str

    def text(self) -> str:
        """Two lines: MFU and VRAM fit."""
        lines = [f"{self.estimate.name}, batch {self.estimate.batch_size}: {self.estimate.step_flops / 1e12:.3f} "
                 f"TFLOP per step in {self.step_time_s:.3f} s = {self.achieved_flops / 1e12:.2f} TFLOP/s, "
                 f"MFU {100 * self.mfu:.1f} % of one GCD's {self.peak_flops / 1e12:.1f} TFLOP/s ({self.precision})"]
        mem = (f"estimated {self.estimate.total_bytes / GiB:.2f} GiB = {100 * self.estimated_fraction_of_gcd:.1f} % "
               "of a GCD")
        if self.measured_peak_bytes is not None:
            mem += (f"; measured peak {self.measured_peak_bytes / GiB:.2f} GiB = "
                    f"{100 * self.measured_fraction_of_gcd:.1f} %")
        return "\n".join(lines + [mem])


def compare(estimate: ModelEstimate, step_time_s: float, *, peak_memory_bytes: float | None = None,
            precision: str = "fp32_matrix", site: Site | str | None = "lumi", devices: int = 1) -> Comparison:
    """Set a measured step time (one device's step, or ``devices`` devices sharing it) and peak memory against the
    estimate: MFU against the GCD's peak for ``precision`` and the share of a GCD's memory."""
    if not step_time_s or step_time_s <= 0:
        raise LumikitError(f"step time {step_time_s!r}: give the measured mean step time in seconds")
    peak = gcd_peak_flops(precision, site) * devices
    achieved = estimate.step_flops / step_time_s
    gcd_bytes = gcd_memory_gb(site) * GiB
    return Comparison(estimate=estimate, step_time_s=step_time_s, achieved_flops=achieved, peak_flops=peak,
                      precision=precision, mfu=achieved / peak, measured_peak_bytes=peak_memory_bytes,
                      estimated_fraction_of_gcd=estimate.total_bytes / gcd_bytes,
                      measured_fraction_of_gcd=None if peak_memory_bytes is None else peak_memory_bytes / gcd_bytes,
                      source=str(_hardware(site).get("source", "")))


def largest_batch(estimate: ModelEstimate, site: Site | str | None = "lumi") -> int:
    """The largest batch whose estimate fits one GCD's memory: parameters, gradients and optimizer state stay,
    activations grow with the batch (batch norm's per-channel statistics, which do not, make it err on the safe
    side)."""
    fixed = estimate.parameter_bytes + estimate.gradient_bytes + estimate.optimizer_bytes
    per_sample = estimate.activation_bytes / max(estimate.batch_size, 1)
    room = gcd_memory_gb(site) * GiB - fixed
    if per_sample <= 0 or room <= 0:
        raise LumikitError(f"{estimate.name}: parameters, gradients and optimizer state ({fixed / GiB:.1f} GiB) "
                           "leave no room on a GCD")
    return int(room // per_sample)
