"""`make lab` as a newcomer runs it: as root (containers, CI boxes) and as an ordinary user, it prints a URL that
opens JupyterLab at the repository root on module 00 within 60 s."""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VENV_PY = Path(sys.executable)
MARK = "LUMIKIT_TEST_LAB_MARK"  # carried into every lab this module starts, so a test can find them in /proc
URL = re.compile(r"(http://127\.0\.0\.1:\d+/\S*\?token=\w+)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def venv_of_this_python() -> Path:
    venv = VENV_PY.parent.parent
    if not (venv / "bin" / "jupyter").exists():
        pytest.skip(f"no jupyter beside {VENV_PY}: run the tests with the workbook's venv (make test)")
    return venv


def as_ordinary_user(home: Path) -> list[str]:
    """A prefix that runs a command as a non-root user: none when we are one already (a learner's laptop), else a
    real one (nobody) where it can read the venv's interpreter, else a user namespace that maps us to uid 1000
    (the program sees an ordinary uid)."""
    if os.geteuid() != 0:
        return []
    interpreter = VENV_PY.resolve()
    readable = all(os.stat(p).st_mode & 0o005 for p in [*interpreter.parents][::-1] if p != Path("/")) \
        and os.stat(interpreter).st_mode & 0o005
    if readable and shutil.which("setpriv"):
        os.chown(home, 65534, 65534)
        return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    if shutil.which("unshare") and subprocess.run(["unshare", "--user", "--map-user=1000", "--map-group=1000",
                                                   "true"], capture_output=True).returncode == 0:
        return ["unshare", "--user", "--map-user=1000", "--map-group=1000"]
    pytest.skip("cannot start a process as a non-root user here (no readable interpreter, no user namespaces)")


def start_lab(prefix: list[str], home: Path) -> tuple[subprocess.Popen, str, str]:
    """Run `make lab` until it prints its URL; return the process, the URL and what it printed."""
    venv = venv_of_this_python()
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
           "JUPYTER_RUNTIME_DIR": str(home / "runtime"), MARK: os.environ.get(MARK, "")}
    cmd = [*prefix, "make", "-s", "lab", f"VENV={venv}", f"LAB_PORT={free_port()}"]
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    STARTED.append(proc)
    printed: list[str] = []
    deadline = time.monotonic() + 60
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            line = proc.stdout.readline()
            if not line:
                time.sleep(0.1)
                continue
            printed.append(line)
            if match := URL.search(line):
                return proc, match.group(1), "".join(printed)
    except BaseException:  # Ctrl-C while waiting: the server must not outlive the test run
        stop(proc)
        raise
    stop(proc)
    pytest.fail("make lab printed no URL within 60 s (exit %s):\n%s" % (proc.returncode, "".join(printed)))


def fetch(url: str, proc: subprocess.Popen, printed: str, wait: float = 30.0) -> tuple[int, str]:
    """GET ``url`` (status, text), retrying while the server is not accepting yet; a failure says what the lab
    printed and whether it is still running."""
    deadline = time.monotonic() + wait
    while True:
        try:
            with urllib.request.urlopen(url, timeout=30) as page:
                return page.status, page.read().decode()
        except urllib.error.URLError as exc:
            if time.monotonic() > deadline or proc.poll() is not None:
                state = "still running" if proc.poll() is None else f"exited {proc.returncode}"
                rest = (proc.stdout.read() if proc.stdout else "") or ""
                pytest.fail(f"{url}: {exc} (make lab {state}); it printed:\n{printed}{rest}")
            time.sleep(0.5)


#: Every lab this module started; the fixture below stops any still running when the module ends, however it ends.
STARTED: list[subprocess.Popen] = []


@pytest.fixture(autouse=True, scope="module")
def _no_lab_left_behind():
    """An interrupted or failed run leaves no JupyterLab server behind (each runs in its own process group)."""
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, _stop_all_and_exit)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        for proc in STARTED:
            if proc.poll() is None:
                stop(proc)


def _stop_all_and_exit(signum: int, frame: object) -> None:
    for proc in STARTED:
        if proc.poll() is None:
            stop(proc)
    raise SystemExit(128 + signum)


def stop(proc: subprocess.Popen) -> None:
    """End the lab's whole process group (a lab that already ended is fine)."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    except ProcessLookupError:
        proc.poll()
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.parametrize("who", ["root", "user"])
def test_make_lab_prints_a_working_url_on_module_00(who: str, tmp_path: Path) -> None:
    if who == "root" and os.geteuid() != 0:
        pytest.skip("the root case of `make lab` (it adds --allow-root) needs root; the user case runs")
    home = tmp_path / "home"
    home.mkdir()
    prefix = as_ordinary_user(home) if who == "user" else []
    proc, url, printed = start_lab(prefix, home)
    try:
        assert "/lab/tree/notebooks/00_start_here.ipynb" in url
        assert ("--allow-root" in printed) == (who == "root")
        status, page = fetch(url, proc, printed)
        assert status == 200 and "JupyterLab" in page
        base, token = url.split("/lab/", 1)[0], url.rsplit("token=", 1)[1]
        listing = fetch(f"{base}/api/contents?token={token}", proc, printed)[1]
        assert all(f'"name": "{d}"' in listing or f'"name":"{d}"' in listing
                   for d in ("notebooks", "exercises", "solutions"))
    finally:
        stop(proc)


def labs_marked(mark: str) -> list[int]:
    """PIDs of JupyterLab processes whose environment carries ``MARK=mark`` (the labs one test run started)."""
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if f"{MARK}={mark}".encode() in environ.read_bytes().split(b"\0") \
                    and b"jupyter" in (environ.parent / "cmdline").read_bytes():
                found.append(int(environ.parent.name))
        except OSError:
            continue
    return found


def test_an_interrupted_test_run_leaves_no_lab_running(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT) or a kill (SIGTERM) of `pytest` while a lab is up: the lab is stopped with it."""
    venv_of_this_python()
    for signum in (signal.SIGINT, signal.SIGTERM):
        mark = f"{os.getpid()}-{signum}"
        proc = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__,
                                 "-k", "working_url and user"], cwd=REPO, env={**os.environ, MARK: mark},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 120
        while not labs_marked(mark) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        if proc.poll() is not None:
            pytest.skip(f"the inner test run ended (exit {proc.returncode}) before a lab started")
        assert labs_marked(mark), "no lab started within 120 s"
        os.kill(proc.pid, signum)
        proc.wait(timeout=60)
        deadline = time.monotonic() + 30
        while labs_marked(mark) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = labs_marked(mark)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        assert not left, f"{signal.Signals(signum).name} to pytest left lab processes {left} running"


def test_the_workbooks_lab_turns_off_the_news_pop_up() -> None:
    """`make lab` adds jupyter-config/ to JUPYTER_CONFIG_PATH; its page config disables the announcements plugin
    (the "get notified about official Jupyter news?" pop-up on first open)."""
    if shutil.which("make") is not None:
        dry = subprocess.run(["make", "-n", "lab", f"VENV={Path(sys.prefix)}"], cwd=REPO, capture_output=True,
                             text=True).stdout
        assert f"JUPYTER_CONFIG_PATH={REPO}/jupyter-config" in dry
    env = {**os.environ, "JUPYTER_CONFIG_PATH": str(REPO / "jupyter-config")}
    code = ("from jupyterlab_server.config import get_page_config; "
            "print(get_page_config([], None).get('disabledExtensions'))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60).stdout
    assert "@jupyterlab/apputils-extension:announcements" in out
