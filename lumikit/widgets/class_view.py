"""The live class view for an instructor's notebook: learners x exercises coloured by status, stuck learners marked,
the commonest mistake per exercise, a refresh button and a follow switch.

Thin over :mod:`lumikit.checks.instructor.classview` (which reads the class folder, caches records and decides who
is stuck): this module only draws. ``ClassView(DIR).refresh()`` reads once, without a thread (tests and nbval); ``start()``
follows the folder every ``interval`` seconds (at least 10).
"""
from __future__ import annotations

import html
import os
import threading
from typing import Any, Collection

import ipywidgets as widgets

from ..checks.instructor.classview import MIN_REFRESH_S, ClassReader, ClassState, StuckRule, iso
from ..errors import LumikitError

CSS_VIEW = "lumikit-class-view"
CSS_GRID = "lumikit-class-grid"
CSS_STUCK = "lumikit-class-stuck"
CSS_MISTAKES = "lumikit-class-mistakes"
#: Cell colours by status (a stuck cell is outlined in red and marked ``!``).
COLOURS = {"passed": "#2da44e", "failed": "#fb8f44", "unanswered": "#eaeef2", "not checked": "#8c959f",
           "unreadable": "#8250df"}
_STYLE = f"""<style>
.{CSS_GRID} {{border-collapse: collapse; font: 11px monospace}}
.{CSS_GRID} th {{padding: 1px 3px; text-align: left; white-space: nowrap; font-weight: normal}}
.{CSS_GRID} thead th {{writing-mode: vertical-rl; transform: rotate(180deg); height: 3.5em}}
.{CSS_GRID} td.lumikit-class-cell {{width: 12px; height: 14px; border: 1px solid #fff; text-align: center;
  color: #fff; font-weight: bold}}
.{CSS_GRID} td.lumikit-stuck {{outline: 2px solid #cf222e; outline-offset: -2px; color: #cf222e}}
.{CSS_GRID} td.lumikit-class-note {{color: #57606a; white-space: nowrap}}
</style>"""


def _legend() -> str:
    keys = "".join(f'<span style="background:{c};padding:0 6px;margin:0 2px">&nbsp;</span>{html.escape(s)} '
                   for s, c in COLOURS.items())
    return f"<div>{keys}<span style='color:#cf222e;font-weight:bold'>!</span> stuck</div>"


def grid_html(state: ClassState) -> str:
    """The learners x exercises table: one coloured cell per record, a tooltip with status, attempts and why."""
    stuck = {(s.learner, s.exercise): s.why for s in state.stuck}
    head = "".join(f"<th>{html.escape(e)}</th>" for e in state.exercises)
    rows = []
    for row in state.learners:
        who = html.escape(row.learner)
        cells = []
        for e in state.exercises:
            cell = row.cells.get(e)
            if cell is None:
                cells.append('<td class="lumikit-class-cell" data-status=""></td>')
                continue
            why = stuck.get((row.learner, e))
            status = "unreadable" if cell.status == "unreadable" else cell.shown
            tip = f"{row.learner} {e}: {cell.shown}, {cell.attempts} attempt(s), {iso(cell.updated) or 'no time'}"
            tip += f"; STUCK: {why}" if why else ""
            cls = "lumikit-class-cell" + (" lumikit-stuck" if why else "")
            cells.append(f'<td class="{cls}" style="background:{COLOURS.get(status, "#fff")}" '
                         f'data-learner="{who}" data-exercise="{html.escape(e)}" '
                         f'data-status="{html.escape(status)}" title="{html.escape(tip)}">{"!" if why else ""}</td>')
        ago = "never" if row.last_activity is None else f"{max(0.0, state.now - row.last_activity) / 60:.0f} min"
        said = "; ".join([*([row.note] if row.note else []),
                          *([f"{row.unknown:,} unknown record(s), not shown"] if row.unknown else [])])
        note = f'<td class="lumikit-class-note">{html.escape(said)}</td>' if said else ""
        rows.append(f'<tr data-learner="{who}"><th>{who}</th><th>{html.escape(ago)}</th>{"".join(cells)}{note}</tr>')
    return (f'{_STYLE}{_legend()}<table class="{CSS_GRID}"><thead><tr><th>learner</th><th>last activity</th>'
            f'{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>')


def stuck_html(state: ClassState) -> str:
    """The stuck learners, one line each with why."""
    if not state.stuck:
        return "<p><b>Stuck now</b>: nobody.</p>"
    items = "".join(f"<li><b>{html.escape(s.learner)}</b> on {html.escape(s.exercise)}: {html.escape(s.why)}</li>"
                    for s in state.stuck)
    return f'<p><b>Stuck now</b> ({len(state.stuck)}):</p><ul class="{CSS_STUCK}">{items}</ul>'


def mistakes_html(state: ClassState) -> str:
    """The commonest mistake per exercise (each learner's latest failure within the rule's window)."""
    window = f"{state.rule.window_s / 60:g} min"
    if not state.mistakes:
        return f"<p><b>Common mistakes</b> (last {window}): none named.</p>"
    items = "".join(f"<li><b>{html.escape(e)}</b>: {html.escape(found[0][0])} ({found[0][1]} learner"
                    f"{'s' if found[0][1] != 1 else ''})</li>" for e, found in state.mistakes.items())
    return f'<p><b>Common mistakes</b> (last {window}), to explain to the room:</p><ul class="{CSS_MISTAKES}">' \
           f"{items}</ul>"


class ClassView:
    """The class view widget; ``now`` (epoch seconds) judges as of a fixed time (a generated class, a replay)."""

    def __init__(self, class_dir: str | os.PathLike[str], *, rule: StuckRule | None = None,
                 interval: float = MIN_REFRESH_S, now: float | None = None,
                 exercises: Collection[str] | None = None) -> None:
        self.reader = ClassReader(class_dir, rule, exercises)
        self.interval = max(float(interval), MIN_REFRESH_S)
        self.now = now
        self.state: ClassState | None = None
        self.status = widgets.HTML()
        self.grid = widgets.HTML()
        self.stuck = widgets.HTML()
        self.mistakes = widgets.HTML()
        self.button = widgets.Button(description="Refresh", icon="refresh")
        self.button.on_click(lambda _b: self.refresh())
        self.follow = widgets.ToggleButton(description=f"Follow (every {self.interval:g} s)", value=False)
        self.follow.observe(self._on_follow, names="value")
        self.widget = widgets.VBox([widgets.HBox([self.button, self.follow, self.status]),
                                    widgets.HBox([self.stuck, self.mistakes]), self.grid])
        self.widget.add_class(CSS_VIEW)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.refresh()

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    def refresh(self) -> ClassState:
        """Read what changed in the class folder and redraw."""
        with self._lock:
            state = self.reader.refresh(self.now)
            self.state = state
            self.grid.value = grid_html(state)
            self.stuck.value = stuck_html(state)
            self.mistakes.value = mistakes_html(state)
            refused = f"; {len(state.problems)} entr{'ies' if len(state.problems) != 1 else 'y'} refused" \
                if state.problems else ""
            self.status.value = (f"{len(state.learners)} learners, {len(state.exercises)} exercises, "
                                 f"{len(state.stuck)} stuck, as of {html.escape(iso(state.now) or '')} "
                                 f"(read {state.parsed} changed record(s) in {state.seconds:.2f} s{refused})")
        return state

    def start(self) -> None:
        """Refresh every ``interval`` seconds in a background thread until :meth:`stop`."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="lumikit-class-view", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop following (returns within a second)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)

    @property
    def running(self) -> bool:
        """Whether the view follows the folder now."""
        return self._thread is not None and self._thread.is_alive()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.refresh()
            except LumikitError as err:  # the folder went away: say so, keep following
                self.status.value = f"<b>not refreshed</b>: {html.escape(str(err))}"

    def _on_follow(self, change: dict[str, Any]) -> None:
        if change["new"]:
            self.start()
        else:
            self.stop()
