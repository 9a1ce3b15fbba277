"""The course's jobs in one list: LUMI accepts each of them, the notebooks launch exactly these specs, a lumi-sim job
knows where it runs, and the rehearsal's measurements read what the ranks saw."""
from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

from lumikit import course_jobs as cj
from lumikit.errors import SpecError
from lumikit.jobs import spec, workload_spec
from lumikit.jobs.validate import validate
from lumikit.launch import mode_line
from lumikit.rehearse import Check, measure, probed, verdict
from lumikit.site import detect_site, load_site

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
LUMI = load_site("lumi")


def test_every_module_that_launches_a_job_is_in_the_list():
    modules = sorted({j.module for j in cj.course_jobs()})
    assert modules == ["01", "02", "03", "04", "05", "07", "08", "12"]
    assert all(j.promises for j in cj.course_jobs())


@pytest.mark.parametrize("job", cj.course_jobs(site="lumi"), ids=lambda j: j.title)
def test_lumi_accepts_every_course_job_at_full_scale(job):
    validate(job.spec.with_(account="project_465000000"), LUMI)


def test_module_03_asks_for_one_gcd_its_seven_cores_and_60_gb():
    first = cj.course_job("03", "lm-first", scratch="/scratch/x")
    assert (first.partition, first.gpus_per_node, first.cpus_per_task, first.mem_per_gpu, first.time) == (
        "small-g", 1, 7, "60G", "0:15:00")
    assert first.command[-4:] == ("--checkpoint", "/scratch/x/03-lm.pt", "--checkpoint-every", "6")


def test_module_07_is_the_seed_size_on_lumi_and_tiny_elsewhere():
    on_lumi = {j.key: j.spec for j in cj.course_jobs(["07"], site="lumi")}
    here = {j.key: j.spec for j in cj.course_jobs(["07"], site="lumi-sim")}
    assert "resnet152" in on_lumi["single"].command and "tiny" in here["single"].command
    assert (on_lumi["ddp"].ntasks_per_node, on_lumi["ddp"].gpus_per_node, on_lumi["ddp"].cpus_per_task) == (2, 2, 7)
    assert (on_lumi["dp"].ntasks_per_node, on_lumi["dp"].gpus_per_node, on_lumi["dp"].cpus_per_task) == (1, 2, 14)


def test_an_unknown_module_or_key_names_the_known_ones():
    with pytest.raises(SpecError, match="use some of: 01, 02, 03, 04, 05, 07, 08, 12"):
        cj.course_jobs(["06"])
    with pytest.raises(SpecError, match="use one of: single, ddp, dp, torchrun"):
        cj.course_job("07", "fsdp")


# ------------------------------------------------------------------------------------------------ no drift

def _launched(source: str) -> list[ast.expr]:
    """The argument of every ``launch(...)`` call in a notebook's source."""
    return [n.args[0] for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "launch" and n.args]


def _names_called(tree: ast.AST) -> set[str]:
    return {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}


@pytest.mark.parametrize("notebook", ["03_first_training_job", "04_watching_the_gpu", "07_several_gpus"])
def test_these_notebooks_launch_only_specs_built_by_the_course_list(notebook):
    source = (NOTEBOOKS / f"{notebook}.py").read_text()
    tree = ast.parse(source)
    assigned = {t.id: node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                for t in node.targets if isinstance(t, ast.Name)}
    local_builders = {f.name for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
                      and _names_called(f) & {"course_resnet_job", *cj.BUILDERS}}
    imported = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                and n.module == "lumikit.course_jobs" for a in n.names}
    allowed = imported | local_builders
    launched = _launched(source)
    assert launched, f"{notebook} launches nothing"
    for arg in launched:
        value = assigned.get(arg.id, arg) if isinstance(arg, ast.Name) else arg
        built_by = _names_called(value) | ({value.value.func.id} if isinstance(value, ast.Call) and isinstance(
            value.func, ast.Attribute) and isinstance(value.func.value, ast.Call) else set())
        assert built_by & allowed, f"{notebook}: launch({ast.unparse(arg)}) is not built from lumikit.course_jobs"


def _notebook_spec(notebook: str, variable: str):
    """Evaluate a notebook's top-level assignments of constants and specs, and return ``variable``'s spec."""
    namespace = {"spec": spec, "workload_spec": workload_spec, "sys": sys}
    for node in ast.parse((NOTEBOOKS / f"{notebook}.py").read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                namespace[node.targets[0].id] = eval(compile(ast.Expression(node.value), notebook, "eval"), namespace)
            except Exception:  # noqa: BLE001 - assignments that need the kernel (runs, plots) are not specs
                continue
    return namespace.get(variable)


@pytest.mark.parametrize("job", [j for j in cj.course_jobs() if j.variable], ids=lambda j: j.title)
def test_the_other_notebooks_launch_the_same_spec_as_the_list(job):
    assert _notebook_spec(job.notebook, job.variable) == job.spec


@pytest.mark.parametrize("folder", ["notebooks", "exercises", "solutions"])
def test_module_12_launches_the_ladder_of_the_course_list(folder):
    from lumikit.ladder.cli import ladder_job

    source = (NOTEBOOKS.parent / folder / "12_making_it_faster.py").read_text()
    (launched,) = [arg for arg in _launched(source) if isinstance(arg, ast.Call) and _names_called(arg) == {"ladder_job"}]
    assert eval(compile(ast.Expression(launched), folder, "eval"), {"ladder_job": ladder_job}) == cj.course_job(
        "12", "ladder")


def test_module_12s_ladder_is_one_gcd_with_its_seven_cores_and_the_lessons_three_rungs():
    ladder = cj.course_job("12", "ladder", site="lumi")
    assert (ladder.partition, ladder.gpus_per_node, ladder.cpus_per_task, ladder.container) == (
        "small-g", 1, 7, "pytorch")
    command = list(ladder.command)
    assert command[1:3] == ["-m", "lumikit.ladder.run"]
    assert command[command.index("--rungs") + 1] == "fp32,bf16,fused" and command[command.index("--site") + 1] == "lumi"


# ------------------------------------------------------------------------------------------------ lumi-sim

@pytest.fixture
def in_a_job(monkeypatch, tmp_path):
    """This process as a lumi-sim job sees it: SLURM_JOB_ID and the cluster's SLURM_CONF, nothing else set."""
    for name in ("LUMIKIT_SITE", "LUMIKIT_BACKEND_OVERRIDE", "LUMI_STACK_VERSION"):
        monkeypatch.delenv(name, raising=False)
    conf = tmp_path / "etc" / "slurm.conf"
    conf.parent.mkdir()
    conf.write_text("ClusterName=lumi-sim\n")
    monkeypatch.setenv("LUMIKIT_SLURM_SIM_DIR", str(tmp_path))
    monkeypatch.setenv("SLURM_CONF", str(conf))
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    return monkeypatch


def test_inside_a_lumi_sim_job_the_site_is_lumi_sim_and_the_mode_line_says_so(in_a_job):
    assert detect_site() == "lumi-sim"
    assert mode_line().startswith("Mode: lumi-sim - jobs go to Slurm")


def test_outside_a_job_or_with_another_cluster_it_stays_the_laptop(in_a_job, tmp_path):
    in_a_job.delenv("SLURM_JOB_ID")
    assert detect_site() == "laptop"
    in_a_job.setenv("SLURM_JOB_ID", "42")
    in_a_job.setenv("SLURM_CONF", str(tmp_path / "another.conf"))
    assert detect_site() == "laptop"


# ------------------------------------------------------------------------------------------------ measurements

SEEN = [{"rank": 0, "node": "nid005001", "gpus_visible": 1, "device": "AMD Instinct MI250X", "cpus": [49, 50, 51, 52,
                                                                                                   53, 54, 55]},
        {"rank": 1, "node": "nid005001", "gpus_visible": 1, "device": "AMD Instinct MI250X", "cpus": [57, 58, 59, 60,
                                                                                                   61, 62, 63]}]
NO_RCCL = {"nccl_info_lines": 0, "transport": None, "network": None}


def test_two_ranks_with_their_own_seven_cores_keep_the_ddp_promises():
    assert measure("ranks", SEEN, NO_RCCL, {}) == (2, "ranks that wrote what they saw")
    assert measure("gpus_visible", SEEN, NO_RCCL, {})[0] == 1
    assert measure("cores_per_rank", SEEN, NO_RCCL, {}) == (7, "rank 0: 49-55; rank 1: 57-63")
    assert measure("disjoint_cores", SEEN, NO_RCCL, {})[0] is True
    shared = [dict(SEEN[0]), dict(SEEN[1], cpus=[55, 56])]
    assert measure("disjoint_cores", shared, NO_RCCL, {}) == (False, "ranks share CPUs")


def test_a_missing_measurement_is_not_measured_never_a_pass():
    promise = cj.Promise("busy_power_w", 300, "around 300 W")
    measured, note = measure("busy_power_w", SEEN, NO_RCCL, {"status": "no report card: no GPU record"})
    assert (measured, verdict(promise, measured), note) == (None, "not measured", "no report card: no GPU record")
    assert verdict(promise, 324.0) == "holds" and verdict(promise, 90.0) == "differs"
    assert Check("k", "s", 1, 0, verdict(cj.Promise("gpus_visible", 1, ""), 0)).verdict == "differs"


def test_the_probe_goes_in_front_of_the_command_and_changes_nothing_else():
    ddp = cj.course_job("07", "ddp", site="lumi")
    p = probed(ddp)
    assert p.command[1:4] == ("-m", "lumikit.rehearse.probe", "--") and p.command[4:] == ddp.command
    assert dict(p.env) == {**dict(ddp.env), "NCCL_DEBUG": "INFO"}
    assert p.with_(command=ddp.command, env=ddp.env) == ddp


def test_a_rehearsal_whose_jobs_are_refused_reports_why_and_fails(tmp_path):
    from lumikit.rehearse import rehearse

    result = rehearse("lumi", ["03"], runs_dir=tmp_path)  # no account configured: LUMI refuses every job
    (only,) = result.outcomes
    assert (only.module, only.key, only.state, only.job_id) == ("03", "lm-first", "FAILED", None)
    assert "bills every job to a project" in only.error
    assert not result.all_completed
    report = (result.folder / "report.md").read_text()
    assert "0 of 1 jobs COMPLETED" in report and "bills every job to a project" in report
    assert (result.folder / "bundle.json").read_text().strip() == "[]"


def test_rccl_lines_in_a_ranks_log_say_rccl_was_used_and_name_the_transport(tmp_path):
    from lumikit.rehearse import rccl_summary

    assert measure("rccl_used", SEEN, rccl_summary(tmp_path), {})[0] is False
    (tmp_path / "rank0.err").write_text(
        "nid005001:1234:1234 [0] NCCL INFO NET/OFI Using aws-ofi-rccl 1.4.0\n"
        "nid005001:1234:1234 [0] NCCL INFO NET/OFI Selected Provider is cxi (found 4 nics)\n"
        "nid005001:1234:1234 [0] NCCL INFO Using network AWS Libfabric\n")
    found = rccl_summary(tmp_path)
    assert (found["nccl_info_lines"], found["transport"]) == (3, "ofi")
    assert measure("rccl_used", SEEN, found, {}) == (True, "transport ofi, network AWS Libfabric")


# ------------------------------------------------------------------------------------------------ 12's ladder

def _ladder_json(folder, rungs):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ladder.json").write_text(json.dumps({"measured_on": "this CPU (generated for the test)", "rungs": rungs}))
    return folder


def _rung(name, values=(10.0, 11.0, 12.0)):
    return {"rung": name, "samples_per_s": {"median": sorted(values)[len(values) // 2], "min": min(values),
                                            "max": max(values), "values": list(values)},
            "spread_pct": 100 * (max(values) - min(values)) / sorted(values)[len(values) // 2]}


def test_a_ladder_with_every_rung_and_its_spread_keeps_module_12s_promise(tmp_path):
    (promise,) = [p for p in cj.course_jobs(["12"])[0].promises if p.key == "ladder_rungs"]
    run = _ladder_json(tmp_path, [_rung("fp32"), _rung("bf16"), _rung("fused")])
    measured, note = measure("ladder_rungs", [], NO_RCCL, {}, run)
    assert (measured, verdict(promise, measured)) == ("fp32,bf16,fused", "holds")
    assert note == "3 rung(s) with samples/s and spread, this CPU (generated for the test)"


def test_a_ladder_missing_a_rung_or_a_spread_differs_and_says_which(tmp_path):
    (promise,) = [p for p in cj.course_jobs(["12"])[0].promises if p.key == "ladder_rungs"]
    one_repeat = dict(_rung("fused", values=(10.0,)))
    run = _ladder_json(tmp_path / "a", [_rung("fp32"), _rung("bf16"), one_repeat])
    measured, note = measure("ladder_rungs", [], NO_RCCL, {}, run)
    assert (measured, verdict(promise, measured)) == ("fp32,bf16", "differs") and note.endswith("without them: fused")
    run = _ladder_json(tmp_path / "b", [_rung("fp32"), _rung("bf16")])
    assert verdict(promise, measure("ladder_rungs", [], NO_RCCL, {}, run)[0]) == "differs"


def test_a_ladder_job_that_wrote_no_ladder_json_is_not_measured(tmp_path):
    measured, note = measure("ladder_rungs", [], NO_RCCL, {}, tmp_path)
    assert measured is None and "ladder.json" in note
    assert measure("ladder_rungs", [], NO_RCCL, {})[0] is None


# ------------------------------------------------------------------------------------------------ 07's device rule

BOTH = [{"rank": r, "node": "nid005001", "gpus_visible": 2, "local_rank": r, "gcds": ["0", "1"]} for r in (0, 1)]


def test_ddp_ranks_that_see_both_gcds_and_use_local_rank_keep_module_07s_promise():
    (promise,) = [p for p in {j.key: j for j in cj.course_jobs(["07"])}["ddp"].promises if p.key == "device_local_rank"]
    measured, note = measure("device_local_rank", BOTH, NO_RCCL, {})
    assert (measured, verdict(promise, measured)) == ("sees 2 GCDs, uses device LOCAL_RANK", "holds")
    assert note == ("rank 0 sees 2 (PyTorch), LOCAL_RANK 0 -> GCD 0; rank 1 sees 2 (PyTorch), LOCAL_RANK 1 -> GCD 1")


def test_without_pytorchs_gpus_slurms_variables_show_the_same_rule():
    """lumi-sim: torch sees no GPU, but Slurm gives each task ROCR_VISIBLE_DEVICES=0,1."""
    cpu_only = [dict(o, gpus_visible=0) for o in BOTH]
    measured, note = measure("device_local_rank", cpu_only, NO_RCCL, {})
    assert measured == "sees 2 GCDs, uses device LOCAL_RANK" and "Slurm's GPU variables" in note


def test_one_gpu_per_task_breaks_the_rule_and_says_how():
    """--gpus-per-task=1: each rank sees one GCD, so device LOCAL_RANK=1 does not exist in rank 1."""
    per_task = [dict(BOTH[0], gpus_visible=1, gcds=["0"]), dict(BOTH[1], gpus_visible=1, gcds=["0"])]
    measured, _ = measure("device_local_rank", per_task, NO_RCCL, {})
    assert measured == "rank 1: LOCAL_RANK 1 but it sees 1 GCD(s); ranks on nid005001 share GCD(s) 0"
    assert verdict(cj.Promise("device_local_rank", "sees 2 GCDs, uses device LOCAL_RANK", ""), measured) == "differs"


# ------------------------------------------------------------------------------------------------ 08's RCCL transport

OFI_CXI = ("nid005001:1234:1234 [0] NCCL INFO NET/OFI Using aws-ofi-rccl 1.4.0\n"
           "nid005001:1234:1234 [0] NCCL INFO NET/OFI Selected Provider is cxi (found 4 nics)\n"
           "nid005001:1234:1234 [0] NCCL INFO Using network AWS Libfabric\n")
SOCKET = ("nid005001:1234:1234 [0] NCCL INFO NET/Plugin : No plugin found (librccl-net.so)\n"
          "nid005001:1234:1234 [0] NCCL INFO NET/Socket : Using [0]hsn0:10.253.1.1<0>\n"
          "nid005001:1234:1234 [0] NCCL INFO Using network Socket\n")


def test_the_two_node_gpu_job_passes_only_over_ofi_with_cxi(tmp_path):
    from lumikit.rehearse import rccl_summary

    (job,) = [j for j in cj.course_jobs(["08"]) if j.key == "gpu-2nodes"]
    (promise,) = [p for p in job.promises if p.key == "rccl_transport"]
    for log, expected in ((OFI_CXI, ("ofi/cxi", "holds")), (SOCKET, ("socket/-", "differs"))):
        (tmp_path / "rank0.err").write_text(log)
        measured, note = measure("rccl_transport", [], rccl_summary(tmp_path), {})
        assert (measured, verdict(promise, measured)) == expected, note
    (tmp_path / "rank0.err").write_text("rank 0/2 on nid005001: gloo\n")  # lumi-sim: no RCCL at all
    measured, note = measure("rccl_transport", [], rccl_summary(tmp_path), {})
    assert (measured, verdict(promise, measured)) == (None, "not measured") and "no RCCL here" in note


def test_the_two_node_gpu_job_on_lumi_is_two_nodes_with_one_gcd_each_and_the_multinode_binds():
    from lumikit.jobs.render import render_sbatch

    job = cj.course_job("08", "gpu-2nodes", site="lumi")
    assert (job.nodes, job.ntasks_per_node, job.gpus_per_node, job.cpus_per_task, job.container) == (
        2, 1, 1, 7, "pytorch")
    script = render_sbatch(job.with_(account="project_465000000"), "lumi", check=False)
    assert "-B /opt/cray" in script and "NCCL_SOCKET_IFNAME" in script


# ------------------------------------------------------------------------------------------------ power promises

def test_power_is_promised_only_for_jobs_that_own_their_whole_node():
    promised = [(j.title, j.spec.partition) for j in cj.course_jobs(site="lumi")
                if any(p.key == "busy_power_w" for p in j.promises)]
    assert all(cj.owns_whole_node(j.spec, "lumi") for j in cj.course_jobs(site="lumi")
               if any(p.key == "busy_power_w" for p in j.promises)), promised
    one_gcd = cj.course_job("03", "lm-first", site="lumi")
    assert cj.power_promises(one_gcd, "lumi") == ()  # small-g: the package's other GCD may be someone else's
    assert [p.key for p in cj.power_promises(one_gcd.with_(exclusive=True), "lumi")] == ["busy_power_w"]
    whole = one_gcd.with_(partition="standard-g", gpus_per_node=8, mem_per_gpu=None)
    assert [p.key for p in cj.power_promises(whole, "lumi")] == ["busy_power_w"]


# ------------------------------------------------------------------------------------------------ the driver job

def test_a_detached_rehearsal_is_one_small_cpu_job_running_the_rehearsal_into_its_folder(tmp_path):
    from lumikit.rehearse import driver_spec

    driver = driver_spec(LUMI, tmp_path, ["07", "08"], timeout=1800)
    assert (driver.partition, driver.nodes, driver.ntasks_per_node, driver.cpus_per_task, driver.time) == (
        "small", 1, 1, 1, "1:00:00")
    assert driver.container is None  # it calls Slurm: the host-side launcher enters the container itself
    assert driver.command[1:] == ("-m", "lumikit", "rehearse", "--site", LUMI.source, "--into", str(tmp_path),
                                  "--timeout", "1800", "--licence", "CC-BY-4.0", "--json", "--modules", "07,08")
    validate(driver.with_(account="project_465000000"), LUMI)


def test_collecting_a_folder_that_is_not_a_rehearsal_names_the_fix(tmp_path):
    from lumikit.errors import LaunchError
    from lumikit.rehearse import collect

    with pytest.raises(LaunchError, match="not a rehearsal folder; give the folder that `lumikit rehearse --detach`"):
        collect(tmp_path)
