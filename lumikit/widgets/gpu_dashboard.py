"""A live GPU dashboard for a notebook: pick a source, start/stop, choose devices, watch plots and findings.

Thin on top of :mod:`lumikit.smi` (sampler, record tail, plots, interpretation): it never parses. With no GPU it
replays the shipped sessions; ``GpuDashboard(session="ddp-8gcd-starved").show_frame(60)`` renders one frame
without any thread (for nbval and CI). ``GpuDashboard(run=run)`` shows every node and GCD of a launched job from
the GPU record in its run folder (``gpu/<node>.jsonl``): a node x GCD grid, a detail pane per node and a time
slider; it follows the record while the job runs (no Slurm call per refresh) and replays it once the job ended.
"""
from __future__ import annotations

import html
import threading
import time
from pathlib import Path
from typing import Any, Sequence

import ipywidgets as widgets

from ..errors import LumikitError
from ..launch.states import FINAL as FINAL_STATES
from ..plotting import figure_png
from ..site import Site
from ..smi.interpret import Finding, interpret_window
from ..smi.model import Snapshot
from ..smi.plots import CSS_GRID, node_grid_html, node_map, timeline
from ..smi.omnistat import is_omnistat_export, read_omnistat
from ..smi.sampler import RecordTail, Sampler, Source, SourceOption, StaticRecord, available_sources
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
    (e.g. one stream of :func:`~lumikit.smi.sampler.watch_job`, a live ``srun --overlap`` step on a job's node).
    ``speed`` is the replay speed, ``window`` how many recent samples the findings look at.

    ``run`` (a launched :class:`~lumikit.launch.Run` or its folder) shows that job's GPU record instead: every
    node and GCD at once (see :class:`RecordDashboard`); ``interval`` is then the refresh period (at least 2 s).
    An Omnistat export (``omnistat-rocm.gpu.csv`` or its folder) or ``{node: Session}`` shows the same way.
    """

    def __new__(cls, *args: Any, run: Any = None, **kwargs: Any) -> Any:
        if run is not None:
            allowed = {"interval", "window", "site", "detail_every", "follow"}
            extra = set(kwargs) - allowed
            if args or extra:
                raise LumikitError(f"GpuDashboard(run=...) shows the run's GPU record; it takes only "
                                   f"{', '.join(sorted(allowed))} (not {', '.join(sorted(extra)) or 'a session'})")
            return RecordDashboard(run, **kwargs)
        return super().__new__(cls)

    def __init__(self, session: str | None = None, *, source: Source | None = None, interval: float = 1.0,
                 speed: float = 1.0, window: int = 30, site: str | Site = "lumi") -> None:
        self.session = session
        self.interval = interval
        self.window = window
        self.site = site
        self.sampler: Sampler | None = None
        self.last_render_s: float | None = None
        self._options: list[SourceOption] = available_sources(replay_speed=speed)
        if source is not None:
            self._options.insert(0, SourceOption(f"given: {source.name}", lambda: source, True))
        labels = [o.label for o in self._options]
        initial = f"replay: {session}" if session and f"replay: {session}" in labels else (labels[0] if labels
                                                                                             else None)
        self.picker = widgets.Dropdown(options=labels, value=initial, description="source")
        self.start_button = widgets.Button(description="start", icon="play", button_style="success")
        self.stop_button = widgets.Button(description="stop", icon="stop", disabled=True)
        self.devices = widgets.SelectMultiple(options=[], rows=8, description="devices")
        self.status = widgets.HTML(value=self._live_line())
        self.timeline_image = widgets.Image(format="png", layout=widgets.Layout(width="640px"))
        # wider than the timeline: the node map's labels (11 pt) then show at about 11 px, not 7
        self.map_image = widgets.Image(format="png", layout=widgets.Layout(width="860px"))
        self.findings = widgets.HTML(value=findings_html([]))
        self.findings.add_class(CSS_FINDINGS)
        # the device picker beside the timeline only: the node map below gets the whole width for its labels
        self.plots = widgets.VBox([widgets.HBox([self.timeline_image, self.devices]), self.map_image])
        self.plots.add_class(CSS_PLOTS)
        controls = widgets.HBox([self.picker, self.start_button, self.stop_button])
        self.widget = widgets.VBox([controls, self.status, self.plots, self.findings])
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
        s = self.sampler
        if s is not None:  # the last line the loop wrote said "running": say what is true now
            self.status.value = f"{html.escape(s.source.name)}: {s.state}, {s.samples} samples (sampling stopped)"
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


CSS_RECORD = "lumikit-gpu-record"
CSS_DETAIL = "lumikit-gpu-detail"
#: The shortest refresh period of a record view (seconds): a record gains a sample every 2 s by default.
MIN_REFRESH_S = 2.0


def clock(epoch: float | None) -> str:
    """``12:04:31`` (this machine's local time) for an epoch time; ``t = 12 s`` for seconds since a start."""
    if epoch is None:
        return "-"
    if epoch < 1e8:
        return f"t = {epoch:g} s"
    return time.strftime("%H:%M:%S", time.localtime(epoch))


def at_or_before(snapshots: Sequence[Snapshot], t: float | None) -> list[Snapshot]:
    """The samples up to time ``t`` (all when ``t`` is None): what a live view showed at ``t``."""
    if t is None:
        return list(snapshots)
    return [s for s in snapshots if s.timestamp is not None and s.timestamp <= t]


def record_source(run: Any) -> Any:
    """What a record view reads: a :class:`RecordTail` of a run folder, or a :class:`StaticRecord` of an Omnistat
    export (its CSV or folder) or of ``{node: Session}`` already read."""
    if isinstance(run, dict):
        return StaticRecord(run, name="sessions")
    if not hasattr(run, "path") and is_omnistat_export(run):
        return StaticRecord(read_omnistat(run), name=Path(run).name, folder=run)
    return RecordTail(run)


class RecordDashboard:
    """Every node and GCD of a launched job, from the GPU record in its run folder (``gpu/<node>.jsonl``).

    A node x GCD grid (busy %, power, VRAM per cell, coloured by activity), a detail pane per node (its timeline,
    node map and findings) and a time slider. While the job runs, :meth:`start` (called for a running job) polls
    the record every ``interval`` seconds (at least 2 s): each poll reads only what the files gained and costs no
    Slurm call; the grid follows the latest sample, the selected node's plots are redrawn at most every
    ``detail_every`` seconds (matplotlib is the costly part). Once the job has ended the same view replays the
    record: move the slider. The status line says whether the record is generated or recorded.
    """

    def __init__(self, run: Any, *, interval: float = MIN_REFRESH_S, window: int = 30, site: str | Site = "lumi",
                 detail_every: float = 60.0, follow: bool = True) -> None:
        self.run = run
        self.tail: Any = record_source(run)
        self.interval = max(float(interval), MIN_REFRESH_S)
        self.window = window
        self.site = site
        self.detail_every = detail_every
        self.refreshes = 0
        self.detail_renders = 0
        self.last_render_s: float | None = None
        self._detail_at = -float("inf")
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.RLock()
        self._nodes: list[str] = []
        self._quiet = False
        self._following = False
        self.status = widgets.HTML()
        self.grid = widgets.HTML()
        self.grid.add_class(CSS_GRID)
        self.follow = widgets.Checkbox(value=follow, description="follow the latest sample", indent=False)
        self.slider = widgets.FloatSlider(value=0.0, min=0.0, max=0.0, step=1.0, description="time (s)",
                                          continuous_update=False, readout_format=".0f",
                                          layout=widgets.Layout(width="480px"))
        self.when = widgets.HTML()
        self.tabs = widgets.Tab(children=[])
        self.tabs.add_class(CSS_DETAIL)
        self.widget = widgets.VBox([self.status, widgets.HBox([self.slider, self.when, self.follow]), self.grid,
                                    self.tabs])
        self.widget.add_class(CSS_DASHBOARD)
        self.widget.add_class(CSS_RECORD)
        self.slider.observe(self._on_slider, names="value")
        self.tabs.observe(lambda _c: self._draw_detail(force=True), names="selected_index")
        self.refresh(force_detail=True)
        state = self.tail.run_state()
        if state is not None and state not in FINAL_STATES:
            self.start()

    # -- display ------------------------------------------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    @property
    def nodes(self) -> list[str]:
        return list(self._nodes)

    def _t0(self) -> float | None:
        stamps = [s[0].timestamp for n in self._nodes if (s := self.tail.snapshots(n)) and s[0].timestamp is not None]
        return min(stamps) if stamps else None

    def _t_end(self) -> float | None:
        stamps = [s[-1].timestamp for n in self._nodes if (s := self.tail.snapshots(n)) and
                  s[-1].timestamp is not None]
        return max(stamps) if stamps else None

    def _cursor(self) -> float | None:
        """The time shown: the latest sample when following, else the slider's (seconds from the first sample)."""
        t0 = self._t0()
        if t0 is None or self.follow.value:
            return None
        return t0 + float(self.slider.value)

    def _latest(self, node: str, t: float | None) -> Snapshot | None:
        snaps = self.tail.snapshots(node)
        if t is None:
            return snaps[-1] if snaps else None
        shown = at_or_before(snaps, t)
        return shown[-1] if shown else None

    # -- drawing ------------------------------------------------------------------------------------------------
    def _sync_nodes(self) -> None:
        nodes = self.tail.nodes
        if nodes == self._nodes:
            return
        selected = self.tabs.selected_index
        self._nodes = nodes
        panes = []
        for _node in nodes:
            timeline_image = widgets.Image(format="png", layout=widgets.Layout(width="640px"))
            map_image = widgets.Image(format="png", layout=widgets.Layout(width="860px"))
            findings = widgets.HTML()
            findings.add_class(CSS_FINDINGS)
            plots = widgets.VBox([timeline_image, map_image])
            plots.add_class(CSS_PLOTS)
            panes.append(widgets.VBox([plots, findings]))
        self._quiet = True
        try:
            self.tabs.children = panes
            for i, node in enumerate(nodes):
                self.tabs.set_title(i, node)
            self.tabs.selected_index = selected if selected is not None and selected < len(nodes) else (
                0 if nodes else None)
        finally:
            self._quiet = False

    def _sync_slider(self) -> None:
        t0, t1 = self._t0(), self._t_end()
        span = 0.0 if t0 is None or t1 is None else max(0.0, t1 - t0)
        self._quiet = True
        try:
            step = min((h.interval_s for n in self._nodes if (h := self.tail.header(n)) is not None), default=1.0)
            self.slider.step = max(step, 0.1)
            self.slider.max = span
            if self.follow.value:
                self.slider.value = span
        finally:
            self._quiet = False

    def _status_line(self) -> str:
        kinds = self.tail.kinds()
        if not kinds:
            return (f"<b>{html.escape(Path(self.tail.run_path).name)}</b>: no GPU record in this run folder yet "
                    f"({html.escape(str(self.tail.folder))} holds no <code>&lt;node&gt;.jsonl</code>). A run records "
                    "its GPUs when it asks for GPUs and the record is on (the default); older runs have none.")
        words = sorted(set(kinds.values()))
        sources = sorted({h.source for n in self._nodes if (h := self.tail.header(n)) is not None and h.source})
        samples = ", ".join(f"{html.escape(n)}: {len(self.tail.frames(n))}" for n in self._nodes)
        state = self.tail.run_state()
        notes = self.tail.notes()
        note = (f"<br><span style='color:#8d6e63'>{html.escape(notes[-1])}</span>" if notes else "")
        mode = (f"following it, read every {self.interval:g} s" if self._following else
                "a replay: move the slider")
        return (f"<b>{html.escape(' / '.join(words))}</b> GPU record of <b>{html.escape(self.tail.title)}</b>"
                f"{f' ({html.escape(state)})' if state else ''}: {len(self._nodes)} nodes, samples {samples} "
                f"({mode}); source: {html.escape('; '.join(sources) or '-')}{note}")

    def refresh(self, *, force_detail: bool = False) -> int:
        """Read what the record gained and redraw: the grid always, the selected node's plots when the time shown
        changed and ``detail_every`` seconds have passed (or ``force_detail``). Returns the number of new frames."""
        with self._lock:
            t_start = time.perf_counter()
            new = self.tail.poll()
            self._sync_nodes()
            if new or force_detail or self.refreshes == 0:
                self._sync_slider()
                self._draw_grid()
            self.status.value = self._status_line()
            if new or force_detail:
                self._draw_detail(force=force_detail)
            self.refreshes += 1
            self.last_render_s = time.perf_counter() - t_start
            return new

    def _draw_grid(self) -> None:
        t = self._cursor()
        latest = {n: self._latest(n, t) for n in self._nodes}
        stamps = [s.timestamp for s in latest.values() if s is not None and s.timestamp is not None]
        shown = max(stamps) if stamps else None
        self.when.value = f"<span style='font-size:90%'>shown: {html.escape(clock(shown))}</span>"
        what = "at the latest sample" if t is None else "at the slider's time"
        self.grid.value = node_grid_html(latest, kinds=self.tail.kinds(), site=self.site,
                                         when=f"{what} ({clock(shown)})")

    def _draw_detail(self, *, force: bool = False) -> None:
        if self._quiet or not self._nodes or self.tabs.selected_index is None:
            return
        now = time.monotonic()
        if not force and now - self._detail_at < self.detail_every:
            return
        with self._lock:
            self._detail_at = now
            node = self._nodes[self.tabs.selected_index]
            pane = self.tabs.children[self.tabs.selected_index]
            plots, findings = pane.children
            timeline_image, map_image = plots.children
            snaps = at_or_before(self.tail.snapshots(node), self._cursor())
            header = self.tail.header(node)
            label = header.label if header is not None else node
            if not snaps:
                findings.value = (f"<p>{html.escape(label)}: no samples"
                                  + (" (no SMI tool existed on this node)" if header is not None and
                                     header.kind == "absent" else " yet") + "</p>")
                return
            latest = snaps[-1]
            t_rel = None
            if len(snaps) > 1 and latest.timestamp is not None and snaps[0].timestamp is not None:
                t_rel = latest.timestamp - snaps[0].timestamp
            generated = header is not None and header.kind == "generated"
            timeline_image.value = figure_png(timeline(snaps, title=f"{label}: power, busy, VRAM", now=t_rel,
                                                       generated=generated), dpi=72)
            map_image.value = figure_png(node_map(latest, self.site, title=f"{label}: node map at "
                                                                           f"{clock(latest.timestamp)}",
                                                  generated=generated), dpi=72)
            window = snaps[-self.window:]
            findings.value = findings_html(interpret_window(window, self.site), _window_words(window))
            self.detail_renders += 1

    def _on_slider(self, _change: Any) -> None:
        if self._quiet:
            return
        self._quiet = True
        try:
            self.follow.value = False  # the learner took the slider: stop following
        finally:
            self._quiet = False
        with self._lock:
            self._draw_grid()
        self._draw_detail(force=True)

    def show_time(self, seconds: float) -> "RecordDashboard":
        """Show the record ``seconds`` after its first sample (as the slider does)."""
        self.follow.value = False
        self.slider.value = min(max(0.0, seconds), self.slider.max)
        with self._lock:
            self._draw_grid()
        self._draw_detail(force=True)
        return self

    # -- following a running job -------------------------------------------------------------------------------
    def start(self) -> None:
        """Poll the record every ``interval`` seconds in a background thread until the run ends (or :meth:`stop`)."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._following = True
        self.status.value = self._status_line()
        self._thread = threading.Thread(target=self._loop, name="lumikit-gpu-record", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop following (returns within one interval)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.interval + 1.0)
        self._following = False
        self.status.value = self._status_line()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                new = self.refresh()
            except Exception as exc:  # noqa: BLE001 - keep the view alive, say what went wrong
                self.status.value = f"<span style='color:#c62828'>reading the record failed: {html.escape(str(exc))}</span>"
                continue
            state = self.tail.run_state()
            if not new and state in FINAL_STATES:
                self._following = False
                self.refresh(force_detail=True)  # the last word: the whole record, now replayable
                return
