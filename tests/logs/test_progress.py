"""Training output -> a time series of throughput and loss."""
from __future__ import annotations

import pytest

from lumikit.logs import parse_progress, progress_summary, training_series

TQDM = (
    "  0%|          | 0/100 [00:00<?, ?it/s]\r"
    "  1%|          | 1/100 [00:10<16:30, 10.00s/it]\r"
    "  2%|▏         | 2/100 [00:10<08:00,  4.00s/it]\r"
    " 50%|█████     | 50/100 [00:30<00:25,  2.00it/s]\r"
    "{'loss': 2.5, 'grad_norm': 1.25, 'learning_rate': 5e-05, 'epoch': 0.5}\n"
    "Map (num_proc=7):  40%|████      | 400/1000 [00:01<00:01, 400.00 examples/s]\r"
    "Map (num_proc=7):  40%|█████▍███▎     | 300/1000 [00:01<00:01, 300.00 examples/s]\r"  # two ranks over each other
    "100%|██████████| 100/100 [01:05<00:00,  2.50it/s]\n"
    "{'eval_loss': 2.25, 'eval_runtime': 4.5, 'epoch': 1.0}\n"
    "{'label': 0, 'text': 'a review'}\n"
)


def test_tqdm_updates_become_rows_with_rates_in_it_per_s():
    table = parse_progress(TQDM)
    train = training_series(table)
    assert train["step"].tolist() == [0, 1, 2, 50, 100]
    assert train["elapsed_s"].tolist() == [0.0, 10.0, 10.0, 30.0, 65.0]
    assert train["rate"].tolist()[1:] == [pytest.approx(0.1), pytest.approx(0.25), 2.0, 2.5]
    assert train["rate"].isna().tolist()[0]
    assert set(train["series"]) == {"progress"}


def test_named_bars_keep_their_name_and_garbled_updates_are_dropped():
    table = parse_progress(TQDM)
    mapping = table[table["series"] == "Map (num_proc=7)"]
    assert mapping[["step", "total", "rate", "unit"]].values.tolist() == [[400, 1000, 400.0, "examples/s"]]


def test_hugging_face_dicts_give_train_and_eval_losses_at_the_latest_step():
    metrics = parse_progress(TQDM).query("kind == 'metrics'")
    assert metrics[["split", "loss", "epoch", "step"]].values.tolist() == [["train", 2.5, 0.5, 50], ["eval", 2.25, 1.0, 100]]
    assert metrics.iloc[0]["metrics"]["grad_norm"] == 1.25


def test_epoch_loss_and_accuracy_lines():
    text = ("Starting epoch 1.\nEpoch 1, Training Loss: 4.5\nValidation Accuracy: 8.5%\n"
            "Starting epoch 2.\nEpoch 2, Training Loss: 4.25\nval_loss: 4.0 - val_accuracy: 0.25\n")
    table = parse_progress(text)
    assert table[["epoch", "split", "loss", "accuracy"]].fillna(-1).values.tolist() == [
        [1.0, "train", 4.5, -1], [1.0, "validation", -1, 0.085], [2.0, "train", 4.25, -1],
        [2.0, "validation", 4.0, 0.25]]


def test_images_per_second_lines_with_rank_and_epoch():
    text = " * Rank 0 - Epoch  1: 100.5 images/sec per GPU\n * Rank 0 - Epoch  2: 101.5 images/sec per GPU\n" \
           " * Total average: 3232.0 images/sec\n"
    table = parse_progress(text)
    assert table[["series", "rank", "epoch", "rate", "unit"]].astype(object).fillna(-1).values.tolist() == [
        ["rank 0", 0, 1.0, 100.5, "images/s per GPU"], ["rank 0", 0, 2.0, 101.5, "images/s per GPU"],
        ["total", -1, -1, 3232.0, "images/s"]]


def test_summary_of_a_run():
    summary = progress_summary(parse_progress(TQDM))
    assert summary["training"] == {"series": "progress", "steps": 100, "total": 100, "elapsed_s": 65.0,
                                   "median_it_per_s": 2.0, "last_it_per_s": 2.5}
    assert (summary["last_train_loss"], summary["last_eval_loss"]) == (2.5, 2.25)


def test_text_without_progress_gives_an_empty_table():
    table = parse_progress("The following modules were not unloaded:\n  1) lumi-tools\n")
    assert table.empty and list(table.columns)[:3] == ["log_line", "kind", "series"]


def test_the_course_workloads_step_bar_is_the_training_series():
    text = ("lm:  50%|█████     | 6/12 [00:01<00:01,  4.80step/s, loss=5.10]\r"
            "lm: 100%|██████████| 12/12 [00:02<00:00,  5.00step/s, loss=4.70]\n"
            "Map:  100%|██████████| 500/500 [00:01<00:00, 400.00examples/s]\n")
    train = training_series(parse_progress(text))
    assert train[["series", "step", "rate", "unit"]].values.tolist() == [["lm", 6, 4.8, "step/s"],
                                                                        ["lm", 12, 5.0, "step/s"]]
