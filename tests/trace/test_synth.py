"""The synthetic trace generator: deterministic, vendor-specific names, sized on request."""
from __future__ import annotations

import pytest

from lumikit.errors import TraceError
from lumikit.trace.loader import load_trace
from lumikit.trace.synth import SynthSpec, iter_rank_bytes, layers_for_size, write_synthetic


def test_same_spec_same_bytes():
    spec = SynthSpec(ranks=2, steps=2, layers=3, straggler=1)
    assert b"".join(iter_rank_bytes(spec, 1)) == b"".join(iter_rank_bytes(spec, 1))
    assert b"".join(iter_rank_bytes(spec, 0)) != b"".join(iter_rank_bytes(spec, 1))


def test_vendor_names_and_streams(tmp_path):
    write_synthetic(tmp_path / "c", SynthSpec(ranks=1, steps=1, layers=3, vendor="cuda"))
    events = load_trace(tmp_path / "c")[0].events
    names = set(events["name"].astype(str))
    assert {"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cudaMemcpyAsync"} <= names
    kernels = events[events["cat"] == "kernel"]
    assert set(kernels["stream"]) == {7, 20}
    head = (tmp_path / "c" / "rank0.synthetic.pt.trace.json").read_bytes()[:2000]
    assert b'"rank": 0' in head  # spaced, the way Kineto writes it


def test_size_is_chosen_by_layers(tmp_path):
    layers = layers_for_size(0.5, SynthSpec(ranks=1, steps=2))
    (path,) = write_synthetic(tmp_path, SynthSpec(ranks=1, steps=2, layers=layers))
    assert 0.4e6 < path.stat().st_size < 0.6e6


def test_refuses_to_overwrite_and_checks_the_spec(tmp_path):
    write_synthetic(tmp_path, SynthSpec(ranks=1, steps=1, layers=1))
    with pytest.raises(TraceError, match="exists; pass force=True"):
        write_synthetic(tmp_path, SynthSpec(ranks=1, steps=1, layers=1))
    with pytest.raises(TraceError, match="vendor 'intel'"):
        SynthSpec(vendor="intel")
