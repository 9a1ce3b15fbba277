"""lumikit.ood: the "Jupyter for Courses" module and resources, rendered from the templates with an instructor's
project and reservation; missing or placeholder values are refused by name."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from lumikit.errors import LumikitError, SpecError
from lumikit.ood import CourseValuesError, course_module, fill, main, render_course_module, write_course_module
from lumikit.site import load_site

LUMI = load_site("lumi")
PROJECT = "project_465000123"
REPO_URL = "https://github.com/example/lumi-ai-workbook.git"


def module(**over):
    values = dict(project=PROJECT, reservation="AI_course_day1", git_repo=REPO_URL)
    values.update(over)
    return course_module(values.pop("project"), values.pop("reservation"), **values)


def test_rendered_files_carry_the_values_and_no_placeholder():
    files = render_course_module(module())
    assert sorted(files) == ["lumi-ai-workbook-resources.yml", "lumi-ai-workbook.lua"]
    for text in files.values():
        assert PROJECT in text and "AI_course_day1" in text
        assert not re.search(r"\{\{|\}\}|<[a-z_ ]+>|\$\{", text)
    lua = files["lumi-ai-workbook.lua"]
    assert lua.startswith("-- Jupyter\n")  # the app lists only modules whose text contains "Jupyter"
    assert 'setenv("LUMIKIT_RESERVATION", "AI_course_day1")' in lua
    assert f'prepend_path("PATH", "/projappl/{PROJECT}/lumi-workbook/venv/host-bin")' in lua
    assert f'setenv("LUMI_WORKBOOK_EXPECT_SIF", "{LUMI.containers["pytorch"].path}")' in lua
    assert f'setenv("_COURSE_GIT_REPO", "{REPO_URL}")' in lua
    assert 'setenv("_COURSE_NOTEBOOK", "notebooks/00_start_here.ipynb")' in lua


def test_resources_default_to_one_gcd_of_the_site():
    yaml = pytest.importorskip("yaml")
    resources = yaml.safe_load(render_course_module(module())["lumi-ai-workbook-resources.yml"])
    assert resources == {"cores": LUMI.node.cpus_per_gcd, "time": "02:00:00", "partition": LUMI.default_partition,
                         "mem": f"{LUMI.node.usable_memory_per_gcd_gb}GB"}
    assert resources == {"cores": 7, "time": "02:00:00", "partition": "small-g", "mem": "60GB"}


def test_the_lua_module_loads_and_sets_what_the_app_reads(tmp_path):
    lua = shutil.which("lua") or shutil.which("lua5.4")
    if lua is None:
        pytest.skip("no lua interpreter (Debian: apt-get install lua5.4)")
    path = tmp_path / "course.lua"
    path.write_text(render_course_module(module(container="pytorch-rocm61"))["lumi-ai-workbook.lua"])
    # Lmod's functions, reduced to recording what the module sets.
    harness = tmp_path / "harness.lua"
    harness.write_text('local seen = {}\n'
                       'function setenv(k, v) seen[#seen + 1] = k .. "=" .. v end\n'
                       'function prepend_path(k, v) seen[#seen + 1] = k .. "+=" .. v end\n'
                       'function whatis(s) end\n'
                       'dofile(arg[1])\n'
                       'for _, line in ipairs(seen) do print(line) end\n')
    done = subprocess.run([lua, str(harness), str(path)], capture_output=True, text=True,
                          env={"USER": "alice", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    seen = dict(line.split("=", 1) for line in done.stdout.splitlines())
    assert seen["PATH+"] == f"/projappl/{PROJECT}/lumi-workbook/venv/host-bin"
    assert seen["HF_HOME"] == f"/flash/{PROJECT}/alice/hf-cache"
    assert seen["TORCH_HOME"] == f"/scratch/{PROJECT}/alice/torch-cache"
    assert seen["LUMI_WORKBOOK_EXPECT_SIF"] == LUMI.containers["pytorch-rocm61"].path
    assert seen["LUMIKIT_ACCOUNT"] == PROJECT
    assert seen["_COURSE_BASE_NAME"] == "lumi-ai-workbook"
    assert seen["_COURSE_NOTEBOOK_TYPE"] == "lab"


def test_missing_values_are_refused_and_all_named():
    with pytest.raises(CourseValuesError) as err:
        course_module(None, None)
    assert set(err.value.problems) == {"project", "reservation", "git_repo"}
    assert isinstance(err.value, SpecError)
    text = str(err.value)
    assert "project is missing" in text and "reservation is missing" in text
    assert "--project project_<number>" in text and "--reservation NAME (or --no-reservation)" in text


@pytest.mark.parametrize("field, value", [
    ("project", "project_<number>"),
    ("project", "project_XXXXXXX"),
    ("reservation", "<reservation>"),
    ("reservation", "TODO"),
    ("reservation", "CHANGE_ME"),
    ("reservation", "{{ reservation }}"),
    ("course", "your-course"),
    ("git_repo", "https://github.com/<you>/lumi-ai-workbook.git"),
])
def test_placeholders_are_refused(field, value):
    with pytest.raises(CourseValuesError) as err:
        module(**{field: value})
    assert field in err.value.problems
    assert "placeholder" in err.value.problems[field][0]


@pytest.mark.parametrize("over, field, words", [
    ({"project": "465000123"}, "project", "is not a LUMI project"),
    ({"reservation": "AI day 1"}, "reservation", "has spaces, quotes or '$'"),
    ({"course": "../evil"}, "course", "is not a plain name"),
    ({"container": "tensorflow"}, "container", "is unknown"),
    ({"venv": "relative/venv"}, "venv", "is not an absolute path"),
    ({"partition": "gpu"}, "partition", "is not a partition of lumi"),
    ({"time": "2 hours"}, "time", "is not a Slurm time"),
    ({"partition": "dev-g", "time": "04:00:00"}, "time", "longer than dev-g's limit 3:00:00"),
    ({"cores": 0}, "cores", "is 0"),
])
def test_malformed_values_are_refused(over, field, words):
    with pytest.raises(CourseValuesError) as err:
        module(**over)
    assert list(err.value.problems) == [field]
    assert words in err.value.problems[field][0]


def test_a_course_without_reservation_must_say_so():
    with pytest.raises(CourseValuesError):
        module(reservation=None)
    lua = render_course_module(module(reservation=None, no_reservation=True))["lumi-ai-workbook.lua"]
    assert "LUMIKIT_RESERVATION" not in lua
    assert "-- (no reservation: jobs are submitted without one)" in lua


def test_writing_refuses_to_overwrite_unless_forced(tmp_path):
    first = write_course_module(module(), tmp_path)
    assert [p.name for p in first] == ["lumi-ai-workbook.lua", "lumi-ai-workbook-resources.yml"]
    (tmp_path / "lumi-ai-workbook.lua").write_text("-- Jupyter\n-- edited by hand\n")
    with pytest.raises(LumikitError, match="already exist"):
        write_course_module(module(reservation="AI_course_day2"), tmp_path)
    assert (tmp_path / "lumi-ai-workbook.lua").read_text() == "-- Jupyter\n-- edited by hand\n"
    write_course_module(module(reservation="AI_course_day2"), tmp_path, force=True)
    assert "AI_course_day2" in (tmp_path / "lumi-ai-workbook.lua").read_text()


def test_fill_names_a_slot_without_value():
    assert fill("cores: {{ cores }}", {"cores": "7"}) == "cores: 7"
    with pytest.raises(LumikitError, match="no value for mem"):
        fill("mem: {{mem}}", {}, source="t.yml")


def test_main_renders_into_a_folder(tmp_path, capsys):
    out = tmp_path / "modules"
    status = main(["render", "--project", PROJECT, "--reservation", "AI_course_day1", "--git-repo", REPO_URL,
                   "--course", "ai-2026", "-o", str(out)])
    assert status == 0
    assert sorted(p.name for p in out.iterdir()) == ["ai-2026-resources.yml", "ai-2026.lua"]
    printed = capsys.readouterr().out
    assert f"copy them into /projappl/{PROJECT}/www_lumi_modules/" in printed
    assert f"lumi/setup-venv.sh --project {PROJECT} --venv /projappl/{PROJECT}/lumi-workbook/venv" in printed


def test_main_reports_refused_values_with_status_2(tmp_path, capsys):
    status = main(["render", "--project", "project_<n>", "--reservation", "AI_course_day1", "--git-repo", REPO_URL,
                   "-o", str(tmp_path / "out")])
    assert status == 2
    assert "project is still a placeholder ('project_<n>')" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_python_dash_m_entry_point(tmp_path):
    import sys

    done = subprocess.run([sys.executable, "-m", "lumikit.ood", "render", "--project", PROJECT, "--no-reservation",
                           "--git-repo", REPO_URL, "-o", str(tmp_path)], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "lumi-ai-workbook.lua").exists()
