"""Inference with the language model: the KV cache changes the cost, never the tokens; the table has prefill and
decode rates with and without the cache for every batch size."""
from __future__ import annotations

import json
import re

import pytest
import torch

from lumikit.workloads import knobs, lm
from lumikit.workloads.generate import greedy, measure, prompts


def model(size="tiny", seed=0):
    torch.manual_seed(seed)
    return lm.TinyGPT(lm.SIZES[size])


def test_cached_logits_are_the_full_passes_logits_position_by_position():
    net = model().eval()
    ids = lm.encode("The film was a slow burn, but").unsqueeze(0)
    full = net(ids)
    cache = lm.KVCache(net, batch=1, capacity=ids.shape[1])
    first = net(ids[:, :10], cache)  # a prompt of 10, then one position per call
    steps = [net(ids[:, i:i + 1], cache) for i in range(10, ids.shape[1])]
    torch.testing.assert_close(torch.cat([first, *steps], dim=1), full, rtol=1e-4, atol=1e-5)
    assert cache.length == ids.shape[1]
    assert cache.nbytes == 2 * net.cfg.layers * ids.shape[1] * net.cfg.width * 4  # keys + values, fp32


@pytest.mark.parametrize("batch", [1, 3])
def test_greedy_decode_with_the_cache_gives_the_same_tokens_as_without(batch):
    net = model(seed=batch)
    prompt = prompts(lm.encode(lm.load_corpus()), batch, 16, torch.device("cpu"))
    with_cache, *_ = greedy(net, prompt, 24, kv_cache=True)
    without, *_ = greedy(net, prompt, 24, kv_cache=False)
    assert with_cache.shape == (batch, 24)
    assert torch.equal(with_cache, without)


def test_a_cache_refuses_a_second_prompt_after_the_first():
    net = model()
    cache = lm.KVCache(net, batch=1, capacity=16)
    net(lm.encode("abcd").unsqueeze(0), cache)
    with pytest.raises(ValueError, match="one position per call"):
        net(lm.encode("ef").unsqueeze(0), cache)


def test_measure_gives_both_rows_per_batch_size_with_positive_rates():
    rows = measure(model(), lm.encode(lm.load_corpus()), batch_sizes=[1, 4], prompt_tokens=8, new_tokens=6,
                   repeats=1)
    assert [(r.batch, r.kv_cache) for r in rows] == [(1, True), (1, False), (4, True), (4, False)]
    assert all(r.prefill_tokens_per_s > 0 and r.decode_tokens_per_s > 0 for r in rows)
    cfg = lm.SIZES["tiny"]
    assert [r.kv_cache_bytes for r in rows] == [2 * cfg.layers * b * 14 * cfg.width * 4 if kv else 0
                                                for b, kv in ((1, True), (1, False), (4, True), (4, False))]


def test_the_generate_mode_prints_the_table_and_writes_generate_json(tmp_path, capsys):
    assert lm.main(["--generate", "--batch-sizes", "1,2", "--prompt-tokens", "8", "--new-tokens", "4",
                    "--generate-repeats", "1", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    rows = re.findall(r"^\s+(\d+)\s+(yes|no)\s+(\d+)\s+(\d+)\s", out, flags=re.M)
    assert [(b, kv) for b, kv, *_ in rows] == [("1", "yes"), ("1", "no"), ("2", "yes"), ("2", "no")]
    assert all(int(prefill) > 0 and int(decode) > 0 for *_, prefill, decode in rows)
    assert "prefill tok/s" in out and "decode tok/s" in out and "measured on this CPU (" in out
    saved = json.loads((tmp_path / "generate.json").read_text())
    assert saved["weights"] == "random (seed 0)" and len(saved["rows"]) == 4


def test_generate_after_training_uses_the_trained_weights(tmp_path, capsys):
    assert lm.main(["--steps", "2", "--no-progress", "--generate", "--batch-sizes", "1", "--prompt-tokens", "4",
                    "--new-tokens", "3", "--generate-repeats", "1", "--out", str(tmp_path)]) == 0
    assert json.loads((tmp_path / "generate.json").read_text())["weights"] == "trained here"
    assert "FINAL loss=" in capsys.readouterr().out


def test_more_positions_than_the_context_is_refused_naming_the_options(tmp_path, capsys):
    assert lm.main(["--generate", "--prompt-tokens", "60", "--new-tokens", "10", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--prompt-tokens/--new-tokens" in err and "context of 64" in err and "Traceback" not in err


def test_generate_reads_trained_weights_from_a_checkpoint_of_the_same_size_only(tmp_path, capsys):
    ckpt = tmp_path / "lm.pt"
    assert lm.main(["--steps", "2", "--no-progress", "--checkpoint", str(ckpt), "--out", str(tmp_path / "a")]) == 0
    common = ["--generate", "--batch-sizes", "1", "--prompt-tokens", "4", "--new-tokens", "3",
              "--generate-repeats", "1", "--checkpoint", str(ckpt)]
    assert lm.main([*common, "--out", str(tmp_path / "b")]) == 0
    assert json.loads((tmp_path / "b" / "generate.json").read_text())["weights"] == f"from {ckpt}"
    assert lm.main([*common, "--model-size", "small", "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "holds no lm small model (saved: lm tiny)" in err and "Traceback" not in err


def generate_json(tmp_path, capsys, *argv):
    status = lm.main(["--generate", "--batch-sizes", "2", "--prompt-tokens", "8", "--new-tokens", "4",
                      "--generate-repeats", "1", "--out", str(tmp_path), *argv])
    captured = capsys.readouterr()
    assert status == 0 and "Traceback" not in captured.err + captured.out
    return captured.out, json.loads((tmp_path / "generate.json").read_text())


@pytest.mark.skipif(knobs.precision_support("bf16", torch.device("cpu")) is not None, reason="no native bf16 here")
def test_generate_honours_precision_bf16_its_kv_cache_takes_two_bytes_a_value(tmp_path, capsys):
    out, saved = generate_json(tmp_path, capsys, "--precision", "bf16")
    assert saved["precision"] == "bf16" and saved["measured_on"].endswith(", bf16")
    cfg = lm.SIZES["tiny"]
    cached = [row for row in saved["rows"] if row["kv_cache"]]
    assert [row["kv_cache_bytes"] for row in cached] == [2 * cfg.layers * 2 * 12 * cfg.width * 2]  # bf16: 2 bytes
    assert not [line for line in out.splitlines() if line.startswith("--precision")]


def test_generate_in_a_precision_that_cannot_work_here_says_so_in_one_line_and_runs_in_fp32(tmp_path, capsys,
                                                                                             monkeypatch):
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: False)
    out, saved = generate_json(tmp_path / "bf16", capsys, "--precision", "bf16")
    assert [line for line in out.splitlines() if line.startswith("--precision")] == [
        "--precision bf16: this CPU has no native bf16 (no AVX512-BF16 or AMX): autocast would only emulate it; "
        "running in fp32"]
    assert saved["precision"] == "fp32"
    out, saved = generate_json(tmp_path / "fp16", capsys, "--precision", "fp16")
    assert [line for line in out.splitlines() if line.startswith("--precision fp16: fp16 autocast is for GPUs")]
    assert saved["precision"] == "fp32" and saved["rows"][0]["kv_cache_bytes"] == 2 * 2 * 2 * 12 * 64 * 4


def test_the_kv_cache_follows_autocast_and_gives_the_same_tokens_with_and_without_it():
    net = model()
    prompt = prompts(lm.encode(lm.load_corpus()), 2, 8, torch.device("cpu"))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert lm.KVCache(net, batch=2, capacity=12).layers[0].keys.dtype == torch.bfloat16
        with_cache, *_ = greedy(net, prompt, 6, kv_cache=True)
        without, *_ = greedy(net, prompt, 6, kv_cache=False)
    assert lm.KVCache(net, batch=2, capacity=12).layers[0].keys.dtype == torch.float32
    assert with_cache.shape == without.shape == (2, 6)
