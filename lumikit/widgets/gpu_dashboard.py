"""A live GPU dashboard for a notebook: pick a source, start/stop, choose devices, watch plots and findings.

Thin on top of :mod:`lumikit.smi` (sampler, plots, interpretation): it never parses. With no GPU it replays the
shipped sessions; ``GpuDashboard(session="ddp-8gcd-starved").show_frame(60)`` renders one frame without any
thread (for nbval and CI).
"""
from __future__ import annotations

import html
import threading
import time
from typing import Any, Sequence

import ipywidgets as widgets

from ..errors import LumikitError
from ..plotting import figure_png
from ..site import Site
from ..smi.interpret import Finding, interpret_window
from ..smi.model import Snapshot
from ..smi.plots import node_map, timeline
from ..smi.sampler import Sampler, Source, SourceOption, available_sources, watch_job
from ..smi.sessions import read_session, snapshots_at

CSS_DASHBOARD = "lumikit-gpu-dashboard"
CSS_PLOTS = "lumikit-gpu-plots"
CSS_FINDINGS = "lumikit-gpu-findings"


def _window_words(window: Sequence[Snapshot]) -> str:
    """``the last N samples (S s)``: the span the findings look at (the node map shows only the latest)."""
    stamps = [s.timestamp for s in window if s.timestamp is not None]
    span = f", {stamps[-1] - stamps[0]:g} s" if len(stamps) > 1 else ""
    return f"the last {len(window)} samples{span}"


def findings_html(findings: Sequence[Finding], window: str = "the last samples") -> str:
    """The findings as an HTML list (one line each), or a sentence saying there is nothing to report; ``window``
    names the samples they hold in (at least half of them)."""
    if not findings:
        return f"<p><b>Findings</b> (over {html.escape(window)}): nothing unusual.</p>"
    items = "".join(f"<li><b>{html.escape(f.kind)}</b>: {html.escape(f.message)}</li>" for f in findings)
    return f"<p><b>Findings</b> (holding in at least half of {html.escape(window)}):</p><ul>{items}</ul>"


class GpuDashboard:
    """Source picker, start/stop, device selection, refreshing timelines and node map, and findings.

    ``session`` preselects a shipped recording; ``source`` adds a ready-made :class:`~lumikit.smi.sampler.Source`
    (e.g. ``CommandSource(["srun", "--jobid", ID, "--overlap", "rocm-smi", "--json"])``). ``speed`` is the
    replay speed, ``window`` how many recent samples the findings look at. ``run`` (a launched
    :class:`~lumikit.launch.Run`) preselects that job's GPUs: one long-lived ``srun --overlap`` step on its first
    node (or ``node``) streams a reading every ``interval`` seconds (see :func:`~lumikit.smi.sampler.watch_job`).
    """

    def __init__(self, session: str | None = None, *, source: Source | None = None, interval: float = 1.0,
                 speed: float = 1.0, window: int = 30, site: str | Site = "lumi", run: Any = None,
                 node: str | None = None) -> None:
        self.session = session
        self.interval = interval
        self.window = window
        self.site = site
        self.sampler: Sampler | None = None
        self.last_render_s: float | None = None
        self._options: list[SourceOption] = available_sources(replay_speed=speed)
        if source is not None:
            self._options.insert(0, SourceOption(f"given: {source.name}", lambda: source, True))
        if run is not None:
            where = node or "first node"
            self._options.insert(0, SourceOption(
                f"run {run.path.name}: job {run.job_id}, {where}",
                lambda: watch_job(run, interval=interval, nodes=[node] if node else None)[0], True))
        labels = [o.label for o in self._options]
        initial = f"replay: {session}" if session and f"replay: {session}" in labels else (labels[0] if labels
                                                                                             else None)
        self.picker = widgets.Dropdown(options=labels, value=initial, description="source")
        self.start_button = widgets.Button(description="start", icon="play", button_style="success")
        self.stop_button = widgets.Button(description="stop", icon="stop", disabled=True)
        self.devices = widgets.SelectMultiple(options=[], rows=8, description="devices")
        self.status = widgets.HTML(value=self._live_line())
        self.timeline_image = widgets.Image(format="png", layout=widgets.Layout(width="640px"))
        self.map_image = widgets.Image(format="png", layout=widgets.Layout(width="640px"))
        self.findings = widgets.HTML(value=findings_html([]))
        self.findings.add_class(CSS_FINDINGS)
        self.plots = widgets.VBox([self.timeline_image, self.map_image])
        self.plots.add_class(CSS_PLOTS)
        controls = widgets.HBox([self.picker, self.start_button, self.stop_button])
        self.widget = widgets.VBox([controls, self.status,
                                    widgets.HBox([self.plots, self.devices]), self.findings])
        self.widget.add_class(CSS_DASHBOARD)
        self.start_button.on_click(lambda _b: self.start())
        self.stop_button.on_click(lambda _b: self.stop())
        self.devices.observe(lambda _c: self.refresh(), names="value")
        self._snapshots: list[Snapshot] = []
        self._stop = threading.Event()
        self._refresher: threading.Thread | None = None
        self._seen = -1

    # -- display ------------------------------------------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    def _live_line(self) -> str:
        live = [o.label for o in self._options if o.live]
        if live:
            return f"live sources here: {html.escape(', '.join(live))}"
        return "no GPU tool or library found here: replaying generated sessions (not recordings)"

    # -- rendering ----------------------------------------------------------------------------------------------
    def _set_device_options(self, snap: Snapshot) -> None:
        indices = sorted({d.index for d in snap.devices})
        if list(self.devices.options) != indices:
            self.devices.options = indices
            self.devices.value = tuple(indices)

    def render(self, snapshots: Sequence[Snapshot], *, now: float | None = None, title: str | None = None) -> float:
        """Draw these snapshots (timeline of all, node map and findings of the latest); returns seconds taken."""
        t0 = time.perf_counter()
        self._snapshots = list(snapshots)
        if not self._snapshots:
            return 0.0
        latest = self._snapshots[-1]
        self._set_device_options(latest)
        chosen = list(self.devices.value) or None
        self.timeline_image.value = figure_png(timeline(self._snapshots, chosen, title=title, now=now), dpi=72)
        when = f" (t = {latest.timestamp:g} s)" if latest.timestamp is not None and latest.timestamp < 1e6 else ""
        self.map_image.value = figure_png(node_map(latest, self.site, title=f"node map: latest sample{when}"), dpi=72)
        window = self._snapshots[-self.window:]
        self.findings.value = findings_html(interpret_window(window, self.site), _window_words(window))
        self.last_render_s = time.perf_counter() - t0
        return self.last_render_s

    def refresh(self) -> None:
        """Redraw what is on screen (after a device selection change)."""
        if self._snapshots:
            self.render(self._snapshots)

    def show_frame(self, t: float, session: str | None = None) -> "GpuDashboard":
        """Render the session as a live view would have shown it ``t`` seconds in (no thread, no source)."""
        name = session or self.session
        if name is None:
            raise ValueError("show_frame needs a session: GpuDashboard(session='ddp-8gcd-starved').show_frame(30)")
        session_ = read_session(name)
        snaps = snapshots_at(session_.snapshots(), t)
        kind = session_.header.kind
        self.render(snaps, title=f"{name} ({kind}) at t = {t:g} s")
        self.status.value = (f"{html.escape(kind)} session <b>{html.escape(name)}</b>, frame at t = {t:g} s "
                             f"({len(snaps)} samples); source: {html.escape(session_.header.source or '-')}")
        return self

    # -- live ---------------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start sampling the picked source and refreshing the view."""
        self.stop()
        opt = next(o for o in self._options if o.label == self.picker.value)
        try:
            source = opt.make()
        except LumikitError as exc:  # e.g. the run is still PENDING: say so where the learner looks
            self.status.value = f"<span style='color:#c62828'>{html.escape(str(exc))}</span>"
            return
        self.sampler = Sampler(source, interval=self.interval).start()
        self._stop.clear()
        self._seen = -1
        self._refresher = threading.Thread(target=self._refresh_loop, name="lumikit-gpu-dashboard", daemon=True)
        self._refresher.start()
        self.start_button.disabled, self.stop_button.disabled = True, False

    def stop(self) -> None:
        """Stop sampling and refreshing (returns within one interval)."""
        self._stop.set()
        if self.sampler is not None:
            self.sampler.stop()
        if self._refresher is not None:
            self._refresher.join(timeout=self.interval + 1.0)
        self.start_button.disabled, self.stop_button.disabled = False, True

    def _refresh_loop(self) -> None:
        while not self._stop.is_set():
            s = self.sampler
            if s is not None and s.samples != self._seen:
                self._seen = s.samples
                try:
                    self.render(s.snapshots())
                except Exception as exc:  # noqa: BLE001 - keep the view alive, say what went wrong
                    self.status.value = f"<span style='color:#c62828'>drawing failed: {html.escape(str(exc))}</span>"
            if s is not None:
                err = f" - last error: {html.escape(s.last_error)}" if s.state == "error" and s.last_error else ""
                self.status.value = f"{html.escape(s.source.name)}: {s.state}, {s.samples} samples{err}"
                if s.state == "finished":
                    break
            self._stop.wait(self.interval)
