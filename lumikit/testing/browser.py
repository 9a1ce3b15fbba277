"""Driving the workbook in a real browser: a private JupyterLab server and Chromium steered through Playwright.

The browser tests (tests/browser) use these pieces to open a notebook, run all its cells as a learner would, and
check what the page shows; when something does not render, :func:`kernel_report` and the server log say why.
Playwright is imported only when a page is driven, so the server side works without it.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..checks.conventions import KERNELSPEC
from ..errors import LumikitError
from ..files import write_atomic
from .processes import processes_with

CHROMIUM = Path("/usr/bin/chromium")
# Headless, and nothing that phones home or needs a GPU or a user namespace (containers, CI runners as root).
CHROMIUM_ARGS = ("--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run")

# JupyterLab settings for a predictable page: every cell stays in the DOM (no virtual scrolling), no news popups.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                      "checkForUpdates": False},
}


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class BrowserTestError(LumikitError):
    """The browser test harness could not start or drive JupyterLab (the message says what to check)."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def copy_notebooks(source: Path, dest: Path, names: Iterable[str] | None = None) -> list[Path]:
    """Copy the notebooks of ``source`` (all ``*.ipynb``, or ``names``) into ``dest`` with outputs cleared and
    the kernel set to this environment's ``python3`` (:data:`KERNELSPEC`), plus
    every data file or folder beside them (not the jupytext ``.py`` twins, run folders or caches), so relative
    paths in cells resolve and nothing shown in the browser comes from a stale saved output."""
    dest.mkdir(parents=True, exist_ok=True)
    wanted = sorted(source.glob("*.ipynb")) if names is None else [source / n for n in names]
    copied = []
    for nb in wanted:
        if not nb.is_file():
            raise BrowserTestError(f"notebook {nb} not found; build it with `jupytext --sync {nb.with_suffix('.py')}`")
        data = json.loads(nb.read_text(encoding="utf-8"))
        for cell in data.get("cells", []):
            if cell.get("cell_type") == "code":
                cell["outputs"], cell["execution_count"] = [], None
        meta = data.setdefault("metadata", {})
        meta.pop("widgets", None)
        meta["kernelspec"] = KERNELSPEC  # whatever a copy names, it runs the server's own python3
        copied.append(write_atomic(dest / nb.name, json.dumps(data, indent=1, ensure_ascii=False) + "\n"))
    skip = {"runs", ".ipynb_checkpoints", "__pycache__"}
    for item in source.iterdir():
        if item.name in skip or item.suffix in (".ipynb", ".py") or item.name.startswith("."):
            continue
        if item.is_dir():
            shutil.copytree(item, dest / item.name, dirs_exist_ok=True)
        else:
            shutil.copy2(item, dest / item.name)
    return copied


def isolated_env(base: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment with HOME, every Jupyter/IPython/XDG folder and the lumikit config moved under
    ``base``, so the server and its kernels neither read nor write anything of the user's."""
    dirs = {"HOME": "home", "JUPYTER_CONFIG_DIR": "jupyter-config", "JUPYTER_DATA_DIR": "jupyter-data",
            "JUPYTER_RUNTIME_DIR": "jupyter-runtime", "JUPYTERLAB_SETTINGS_DIR": "lab-settings",
            "JUPYTERLAB_WORKSPACES_DIR": "lab-workspaces", "IPYTHONDIR": "ipython", "MPLCONFIGDIR": "matplotlib",
            "XDG_CONFIG_HOME": "xdg-config", "XDG_CACHE_HOME": "xdg-cache", "XDG_DATA_HOME": "xdg-data"}
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JUPYTER", "LUMIKIT_", "IPYTHON")) and k not in ("PYTHONSTARTUP", "PYTHONPATH")}
    for var, sub in dirs.items():
        path = base / sub
        path.mkdir(parents=True, exist_ok=True)
        env[var] = str(path)
    env["LUMIKIT_CONFIG"] = str(base / "no-lumikit-config.toml")
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    env.update(extra or {})
    return env


def write_lab_settings(settings_dir: Path, settings: dict[str, dict[str, Any]] = LAB_SETTINGS) -> None:
    """Write JupyterLab user settings (``plugin/file -> values``) into a settings folder."""
    for rel, values in settings.items():
        write_atomic(settings_dir / rel, json.dumps(values, indent=1) + "\n")


@dataclass
class JupyterLab:
    """A JupyterLab server of this test run: its address, token, folders, log file and process."""

    root: Path
    port: int
    token: str
    log_path: Path
    env: dict[str, str]
    process: subprocess.Popen[bytes] | None = None
    started_s: float = 0.0
    _log: Any = field(default=None, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def url(self, path: str, *query: str) -> str:
        """The address of ``path`` (e.g. ``lab/tree/01.ipynb``) with the token and extra query words."""
        return f"{self.base_url}{path.lstrip('/')}?" + "&".join([*query, f"token={self.token}"])

    def api(self, path: str, method: str = "GET", timeout: float = 5.0) -> Any:
        """Call the REST API at ``api/<path>`` with the token; the decoded JSON answer (None when empty)."""
        req = urllib.request.Request(f"{self.base_url}api/{path.lstrip('/')}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # our own 127.0.0.1 server
            body = resp.read()
        return json.loads(body) if body else None

    def log_tail(self, lines: int = 30) -> str:
        """The last ``lines`` lines of the server log (kernel starts and deaths, tracebacks)."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError as exc:
            return f"(server log {self.log_path} unreadable: {exc})"
        return "\n".join(text.splitlines()[-lines:])

    @classmethod
    def start(cls, root: Path, workdir: Path, *, jupyter: Path | None = None, timeout: float = 90.0,
              lab_args: Iterable[str] = ()) -> JupyterLab:
        """Start ``jupyter lab`` serving ``root`` on 127.0.0.1 (free port, random token, private folders under
        ``workdir``) and wait until ``/api/status`` answers; raises :class:`BrowserTestError` with the log tail."""
        jupyter = jupyter or Path(sys.executable).parent / "jupyter"
        if not Path(jupyter).exists():
            raise BrowserTestError(f"{jupyter} not found; install the workbook's environment with `make venv`")
        env = isolated_env(workdir)
        write_lab_settings(Path(env["JUPYTERLAB_SETTINGS_DIR"]))
        server = cls(root=root, port=free_port(), token=secrets.token_hex(24), log_path=workdir / "jupyterlab.log",
                     env=env)
        argv = [str(jupyter), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={server.port}",
                "--ServerApp.port_retries=0", f"--IdentityProvider.token={server.token}",
                f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--LabApp.extension_manager=readonly",
                "--ServerApp.terminals_enabled=False", *(["--allow-root"] if os.geteuid() == 0 else []), *lab_args]
        server._log = open(server.log_path, "ab")  # noqa: SIM115 - closed in stop()
        server.process = subprocess.Popen(argv, cwd=root, env=env, stdout=server._log, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, start_new_session=True)
        t0 = time.monotonic()
        try:
            server._wait_ready(timeout)
        except BaseException:
            server.stop()
            raise
        server.started_s = time.monotonic() - t0
        return server

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = "no answer yet"
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise BrowserTestError(f"jupyter lab exited with status {self.process.returncode} before answering; "
                                       f"its log ({self.log_path}) ends:\n{self.log_tail()}")
            try:
                self.api("status", timeout=2.0)
                return
            except (urllib.error.URLError, OSError, ValueError) as exc:
                last = str(exc)
            time.sleep(0.25)
        raise BrowserTestError(f"jupyter lab did not answer {self.base_url}api/status within {timeout:g} s "
                               f"(last: {last}); raise the timeout on a slow machine. Its log ends:\n{self.log_tail()}")

    def shutdown_sessions(self) -> None:
        """Stop every notebook session and its kernel (between tests, to free memory and CPU)."""
        try:
            for s in self.api("sessions"):
                self.api(f"sessions/{s['id']}", method="DELETE", timeout=15.0)
        except (urllib.error.URLError, OSError, ValueError):
            pass  # the server is gone or going: stop() cleans up whatever remains

    def stop(self, grace: float = 10.0) -> None:
        """Ask the server to shut down (it stops its kernels), then terminate, then kill; kernels that survive
        (they run in their own sessions) are found by the private runtime folder in their command line."""
        proc = self.process
        if proc is not None and proc.poll() is None:
            try:
                self.api("shutdown", method="POST", timeout=5.0)
            except (urllib.error.URLError, OSError, ValueError):
                pass
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    proc.wait(timeout=grace)
                    break
                except subprocess.TimeoutExpired:
                    try:
                        os.killpg(proc.pid, sig)
                    except ProcessLookupError:
                        break
            proc.wait(timeout=grace)
        for pid in processes_with(self.env["JUPYTER_RUNTIME_DIR"]):  # its kernels
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self._log is not None:
            self._log.close()
            self._log = None


# --------------------------------------------------------------------------------------------------------------
# The page side. Each function takes a Playwright sync ``Page`` (typed loosely: Playwright stays optional).

_NOTEBOOK_READY_JS = """(path) => {
  const app = window.jupyterapp;
  const w = app && app.shell && app.shell.currentWidget;
  if (!w || !w.context || w.context.path !== path || !w.sessionContext || !w.content) return false;
  const kernel = w.sessionContext.session && w.sessionContext.session.kernel;
  return w.sessionContext.isReady && !!kernel && kernel.status === 'idle' && w.content.widgets.length > 0;
}"""

_RUN_ALL_JS = """() => {
  const run = window.__lumikitRun = {done: false, ok: null, error: null};
  window.jupyterapp.commands.execute('notebook:run-all-cells').then(
    ok => { run.done = true; run.ok = ok; },
    err => { run.done = true; run.error = String(err); });
  return true;
}"""

_RUN_DONE_JS = """() => {
  const run = window.__lumikitRun;
  if (!run || !run.done) return false;
  const w = window.jupyterapp.shell.currentWidget;
  const kernel = w.sessionContext.session && w.sessionContext.session.kernel;
  if (kernel && kernel.status !== 'idle') return false;
  return ![...w.node.querySelectorAll('.jp-InputArea-prompt')].some(p => p.textContent.includes('*'));
}"""

_REPORT_JS = """() => {
  const report = {kernel: 'no notebook', finished: false, errors: [], stderr: [], widget_errors: []};
  const app = window.jupyterapp;
  const w = app && app.shell && app.shell.currentWidget;
  if (!w || !w.content || !w.content.model) return report;
  const kernel = w.sessionContext.session && w.sessionContext.session.kernel;
  report.kernel = kernel ? kernel.status : 'no kernel';
  report.finished = !!(window.__lumikitRun && window.__lumikitRun.done);
  const cells = w.content.model.cells;
  for (let i = 0; i < cells.length; i++) {
    const cell = cells.get(i);
    if (cell.type !== 'code') continue;
    for (const o of cell.outputs.toJSON()) {
      if (o.output_type === 'error') {
        report.errors.push({cell: i + 1, ename: o.ename, evalue: o.evalue, traceback: (o.traceback || []).join('\\n')});
      } else if (o.output_type === 'stream' && o.name === 'stderr') {
        report.stderr.push({cell: i + 1, text: Array.isArray(o.text) ? o.text.join('') : String(o.text)});
      }
    }
  }
  for (const node of w.node.querySelectorAll('.jp-OutputArea-output')) {
    const text = node.textContent || '';
    if (text.includes('Error displaying widget') || text.includes('Error rendering output')) {
      report.widget_errors.push(text.trim().slice(0, 400));
    }
  }
  return report;
}"""


@dataclass(frozen=True)
class CellError:
    """An exception a cell raised: which cell (1-based, counting all cells), its type, message and traceback."""

    cell: int
    ename: str
    evalue: str
    traceback: str


@dataclass(frozen=True)
class KernelReport:
    """What the kernel told the page: its status, whether run-all finished, errors, stderr and widget failures."""

    kernel: str
    finished: bool
    errors: tuple[CellError, ...] = ()
    stderr: tuple[tuple[int, str], ...] = ()
    widget_errors: tuple[str, ...] = ()

    def text(self, max_chars: int = 4000) -> str:
        """A readable account for an assertion message (tracebacks last, the total cut to ``max_chars``)."""
        lines = [f"kernel status: {self.kernel}; run-all finished: {self.finished}"]
        if not (self.errors or self.stderr or self.widget_errors):
            lines.append("no cell raised, nothing on stderr, no widget rendering error")
        lines += [f"cell {e.cell} raised {e.ename}: {e.evalue}" for e in self.errors]
        lines += [f"widget rendering error: {w}" for w in self.widget_errors]
        lines += [f"cell {cell} stderr: {text.strip()[-600:]}" for cell, text in self.stderr]
        lines += [f"traceback of cell {e.cell}:\n{e.traceback[-1500:]}" for e in self.errors]
        out = "\n".join(lines)
        return out if len(out) <= max_chars else out[:max_chars] + "\n... (cut)"


def kernel_report(page: Any) -> KernelReport:
    """Collect what the open notebook's cells reported (exceptions, stderr) and widgets that failed to draw."""
    raw = page.evaluate(_REPORT_JS)
    return KernelReport(
        kernel=str(raw["kernel"]), finished=bool(raw["finished"]),
        errors=tuple(CellError(int(e["cell"]), str(e["ename"]), str(e["evalue"]), _ANSI.sub("", e["traceback"]))
                     for e in raw["errors"]),
        stderr=tuple((int(s["cell"]), _ANSI.sub("", s["text"])) for s in raw["stderr"]),
        widget_errors=tuple(raw["widget_errors"]))


@dataclass(frozen=True)
class NotebookRun:
    """One notebook opened and run in the browser: how long each part took and what the kernel reported."""

    name: str
    open_s: float
    run_s: float
    report: KernelReport


def _playwright_error(kind: str = "TimeoutError") -> type[Exception]:
    """Playwright's ``TimeoutError`` (or its base ``Error``), imported only where a page is driven."""
    from playwright import sync_api
    return getattr(sync_api, kind)


def open_notebook(page: Any, server: JupyterLab, name: str, timeout_s: float = 90.0) -> float:
    """Open ``name`` in a fresh JupyterLab workspace and wait for its kernel to be idle; seconds taken."""
    t0 = time.monotonic()
    page.goto(server.url(f"lab/tree/{name}", "reset"), wait_until="domcontentloaded")
    try:
        page.wait_for_function(_NOTEBOOK_READY_JS, arg=name, timeout=timeout_s * 1000, polling=250)
    except _playwright_error() as exc:
        raise BrowserTestError(f"{name} did not open with an idle kernel within {timeout_s:g} s ({exc}); the "
                               f"server log ends:\n{server.log_tail()}") from exc
    return time.monotonic() - t0


def run_all_cells(page: Any, timeout_s: float = 180.0) -> float:
    """Run all cells of the open notebook (JupyterLab's ``notebook:run-all-cells``) and wait until run-all has
    settled, no prompt shows ``[*]`` and the kernel is idle; seconds taken (``timeout_s`` when it did not end)."""
    t0 = time.monotonic()
    page.evaluate(_RUN_ALL_JS)
    try:
        page.wait_for_function(_RUN_DONE_JS, timeout=timeout_s * 1000, polling=250)
    except _playwright_error():  # the kernel report says where it stuck
        return timeout_s
    return time.monotonic() - t0


def run_notebook(page: Any, server: JupyterLab, name: str, timeout_s: float = 180.0) -> NotebookRun:
    """Open ``name``, run all its cells, and collect the kernel report."""
    open_s = open_notebook(page, server, name)
    run_s = run_all_cells(page, timeout_s)
    return NotebookRun(name=name, open_s=open_s, run_s=run_s, report=kernel_report(page))


@dataclass(frozen=True)
class WidgetProbe:
    """What the page shows for one widget: whether its element exists, whether the check held, and details."""

    selector: str
    found: bool
    ok: bool
    detail: str


def probe_widget(page: Any, selector: str, check_js: str, timeout_s: float = 20.0) -> WidgetProbe:
    """Wait until the element ``selector`` exists and ``check_js`` (a JS function of the element returning
    ``{ok, detail}``) holds; the last probe either way (widget views draw a moment after their output arrives)."""
    js = f"""() => {{
      const el = document.querySelector({json.dumps(selector)});
      if (!el) return {{found: false, ok: false, detail: 'no element matches ' + {json.dumps(selector)}}};
      const r = ({check_js})(el);
      return {{found: true, ok: !!r.ok, detail: String(r.detail)}};
    }}"""
    try:
        page.wait_for_function(f"() => ({js})().ok", timeout=timeout_s * 1000, polling=250)
    except _playwright_error():
        pass  # the probe below says what is missing
    raw = page.evaluate(js)
    return WidgetProbe(selector=selector, found=bool(raw["found"]), ok=bool(raw["ok"]), detail=str(raw["detail"]))


def save_screenshots(page: Any, folder: Path, stem: str, selector: str | None = None) -> list[Path]:
    """Save ``<stem>-page.png`` (the whole page, scrolled to the widget) and ``<stem>-widget.png`` (the element
    ``selector``, when it exists); replaces the previous run's pictures atomically."""
    folder.mkdir(parents=True, exist_ok=True)
    saved = []
    element = page.query_selector(selector) if selector else None
    if element is not None:
        try:
            element.scroll_into_view_if_needed(timeout=5000)
            saved.append(write_atomic(folder / f"{stem}-widget.png", element.screenshot(timeout=10000)))
        except _playwright_error("Error"):
            pass  # the element vanished or cannot be scrolled to: a picture of the page is still worth having
    saved.insert(0, write_atomic(folder / f"{stem}-page.png", page.screenshot(full_page=True, timeout=10000)))
    for path in saved:
        path.chmod(0o644)  # artefacts for CI to upload and people to open, not private temp files
    return saved


def failure_message(widget: str, probe: WidgetProbe, run: NotebookRun, server: JupyterLab) -> str:
    """The assertion message when a widget did not render: which, what the page showed, what the kernel said,
    and the end of the server log."""
    return (f"{widget} did not render in {run.name}: {probe.detail}"
            f" (element {probe.selector!r} {'found' if probe.found else 'missing'}).\n"
            f"--- what the kernel reported ---\n{run.report.text()}\n"
            f"--- JupyterLab server log ({server.log_path}), last lines ---\n{server.log_tail(25)}")
