"""The log pictures draw the values of the tables."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from lumikit.logs import parse_hip_log, parse_progress  # noqa: E402
from lumikit.logs.plots import plot_hip_calls, plot_loss, plot_progress, plot_throughput  # noqa: E402

LOG = (" 10%|█         | 10/100 [00:05<00:45,  2.00it/s]\r 20%|██        | 20/100 [00:10<00:40,  2.50it/s]\n"
       "{'loss': 3.0, 'epoch': 0.2}\n 30%|███       | 30/100 [00:14<00:35,  2.50it/s]\n{'loss': 2.0, 'epoch': 0.3}\n")


def test_throughput_is_it_per_s_over_elapsed_seconds():
    line = plot_throughput(parse_progress(LOG)).axes[0].lines[0]
    assert line.get_xdata().tolist() == [5.0, 10.0, 14.0]
    assert line.get_ydata().tolist() == [2.0, 2.5, 2.5]


def test_loss_is_drawn_per_split_against_the_step():
    ax = plot_loss(parse_progress(LOG)).axes[0]
    assert [(ln.get_label(), ln.get_xdata().tolist(), ln.get_ydata().tolist()) for ln in ax.lines] == \
        [("train", [20.0, 30.0], [3.0, 2.0])]


def test_images_per_second_fall_back_to_epochs_and_the_figure_has_both_panels():
    table = parse_progress(" * Rank 0 - Epoch  1: 100.0 images/sec per GPU\n * Rank 0 - Epoch  2: 110.0 images/sec per GPU\n")
    fig = plot_progress(table)
    top = fig.axes[0]
    assert top.get_xlabel() == "epoch" and top.lines[0].get_ydata().tolist() == [100.0, 110.0]
    assert len(fig.axes) == 2


def test_hip_calls_are_placed_in_ms_from_the_first_call():
    log = (":3:hip_memory.cpp :1 : 1000 us: [pid:1 tid: 0x1]  hipMemcpy ( 0x1, 0x2, 8, hipMemcpyHostToDevice )\n"
           ":3:hip_module.cpp :2 : 3000 us: [pid:1 tid: 0x1]  hipLaunchKernel ( 0x1, {1,1,1}, {1,1,1}, 0x2, 0, stream:<null> )\n")
    ax = plot_hip_calls(parse_hip_log(log)).axes[0]
    offsets = [c.get_offsets().tolist() for c in ax.collections]
    assert offsets == [[[2.0, 0.0]], [], [[0.0, 2.0]]]
