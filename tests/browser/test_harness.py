"""The browser harness's plain parts, without a browser or a server: notebook copies, the private environment,
and the kernel report's wording."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from lumikit.testing.browser import (KERNELSPEC, BrowserTestError, CellError, JupyterLab, KernelReport,
                                     copy_notebooks, free_port, isolated_env)


def _notebook(path: Path) -> None:
    path.write_text(json.dumps({
        "nbformat": 4, "nbformat_minor": 5, "metadata": {"jupytext": {"main_language": "python"}, "widgets": {"x": 1}},
        "cells": [{"cell_type": "markdown", "id": "a", "metadata": {}, "source": "# title"},
                  {"cell_type": "code", "id": "b", "metadata": {}, "execution_count": 7, "source": "1 + 1",
                   "outputs": [{"output_type": "execute_result", "execution_count": 7, "metadata": {},
                                "data": {"text/plain": "2"}}]}]}))


def test_copied_notebooks_lose_outputs_and_run_the_environments_python3(tmp_path: Path) -> None:
    src, dest = tmp_path / "notebooks", tmp_path / "root"
    (src / "runs" / "old").mkdir(parents=True)
    (src / "data").mkdir()
    (src / "data" / "trace.json").write_text("{}")
    _notebook(src / "01_x.ipynb")
    (src / "01_x.py").write_text("# %%\n1 + 1\n")

    copied = copy_notebooks(src, dest)

    nb = json.loads((dest / "01_x.ipynb").read_text())
    assert copied == [dest / "01_x.ipynb"]
    assert nb["cells"][1]["outputs"] == [] and nb["cells"][1]["execution_count"] is None
    assert nb["cells"][1]["source"] == "1 + 1" and nb["cells"][0]["source"] == "# title"
    assert nb["metadata"] == {"jupytext": {"main_language": "python"}, "kernelspec": KERNELSPEC}
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*")) == ["01_x.ipynb", "data",
                                                                               "data/trace.json"]


def test_copying_a_missing_notebook_names_it_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(BrowserTestError, match=r"06_traces.ipynb not found; build it with `jupytext --sync"):
        copy_notebooks(tmp_path, tmp_path / "root", ["06_traces.ipynb"])


def test_the_server_environment_keeps_nothing_of_the_users(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_PATH", "/home/someone/.local/share/jupyter")
    monkeypatch.setenv("LUMIKIT_ACCOUNT", "project_465000000")
    monkeypatch.setenv("PATH", "/usr/bin")

    env = isolated_env(tmp_path)

    assert "JUPYTER_PATH" not in env and "LUMIKIT_ACCOUNT" not in env and env["PATH"] == "/usr/bin"
    for var in ("HOME", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR",
                "XDG_CONFIG_HOME", "JUPYTERLAB_SETTINGS_DIR"):
        assert Path(env[var]).parent == tmp_path and Path(env[var]).is_dir(), var
    assert env["LUMIKIT_CONFIG"] == str(tmp_path / "no-lumikit-config.toml")


def test_a_missing_jupyter_is_reported_before_anything_starts(tmp_path: Path) -> None:
    with pytest.raises(BrowserTestError, match=r"no-such-jupyter not found; install .* `make venv`"):
        JupyterLab.start(tmp_path, tmp_path, jupyter=tmp_path / "no-such-jupyter")


def test_free_port_is_a_usable_port_number() -> None:
    assert 1024 <= free_port() <= 65535


def test_the_report_text_puts_the_exception_first_and_the_traceback_last() -> None:
    report = KernelReport(kernel="idle", finished=True,
                          errors=(CellError(3, "FileNotFoundError", "no trace at runs/x", "Traceback ...\nline 9"),),
                          stderr=((2, "UserWarning: slow\n"),))

    assert report.text().splitlines() == [
        "kernel status: idle; run-all finished: True",
        "cell 3 raised FileNotFoundError: no trace at runs/x",
        "cell 2 stderr: UserWarning: slow",
        "traceback of cell 3:", "Traceback ...", "line 9"]
    assert KernelReport("busy", False).text() == ("kernel status: busy; run-all finished: False\n"
                                                  "no cell raised, nothing on stderr, no widget rendering error")
    assert len(KernelReport("idle", True, stderr=((1, "x" * 9000),)).text(max_chars=500)) == 500 + len("\n... (cut)")
