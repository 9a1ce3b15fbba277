"""The power panel's subtitle speaks of MI250X packages only where the session has them (issue 41: the H100
recording's picture said "on MI250X the package power shows on the even GCD")."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from lumikit import reference  # noqa: E402
from lumikit.record.lesson import record_timeline  # noqa: E402
from lumikit.smi.plots import timeline  # noqa: E402
from lumikit.smi.sessions import load_session  # noqa: E402


def _subtitle_and_labels(fig) -> tuple[str, list[str]]:
    legend = fig.legends[0] if fig.legends else None
    return fig.axes[0].get_title(loc="left"), [t.get_text() for t in legend.get_texts()] if legend else []


def test_an_mi250x_session_says_where_package_power_shows_and_names_gcds() -> None:
    title, labels = _subtitle_and_labels(timeline(load_session("idle-node")))
    assert "MI250X" in title and "even GCD" in title and labels[0].startswith("GCD ")


def test_the_h100_recording_speaks_of_gpus_not_mi250x() -> None:
    fig = record_timeline(reference.load("h100-resnet18-record").file_path, "ResNet-18 on an H100")
    title, labels = _subtitle_and_labels(fig)
    assert "MI250X" not in title and "GCD" not in title and all(lb.startswith("GPU ") for lb in labels)
