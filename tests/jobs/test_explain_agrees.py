"""What the job builder says beside a command, read as LUMI support would: the explain lines agree with the cost
line, multi-node billing rounds the job's totals (as LUMI's formula does) and says what per-node rounding would give,
and the quiet mistakes get a warning ($MASTER_ADDR pasted literally, whole nodes without CPU binding)."""
from __future__ import annotations

import pytest

from lumikit.cli import main
from lumikit.jobs import attach_argv, render_srun, spec
from lumikit.jobs.billing import billing_lines, estimate
from lumikit.jobs.render import left_out_lines
from lumikit.jobs.validate import advice
from lumikit.site import load_site

LUMI = load_site("lumi")


def job(**options):
    base = dict(partition="small-g", gpus_per_node=1, cpus_per_task=7, time="1:00:00", account="p")
    return spec(["python", "t.py"], **{**base, **options})


def why(command, option: str) -> str:
    return next(f.why for f in command.flags if f.tokens[0].startswith(option))


# --- billing: the job's totals, and per node beside them ------------------------------------------------------------

def test_two_small_g_nodes_with_9_cores_each_are_rounded_as_one_job():
    # by construction: 2 x 9 = 18 cores -> ceil(18 / 8) = 3 slices (per node: ceil(9 / 8) = 2, x 2 nodes = 4)
    bill = estimate(job(nodes=2, cpus_per_task=9), LUMI)
    assert (bill.reason, bill.gcd_equivalents * bill.nodes, bill.gpu_hours) == ("cores", 3, 1.5)
    assert bill.per_node_gpu_hours_per_hour == 2.0
    assert bill.text() == "1.5 GPU-hours (3 GCD-equivalents in the job's 2 nodes together x 0.5 x 1 h, set by cores)"
    note = bill.rounding_note()
    assert "rounds the job's totals" in note and "rounded per node it would be 2 per hour, 2 GPU-hours" in note
    assert "lumi_env/billing.md" in note
    assert any(w.startswith("18 cores for 2 GCDs are billed as 3 GCDs") for w in bill.warnings)


def test_memory_is_rounded_over_the_job_too_and_equal_roundings_say_nothing_more():
    # 2 nodes x 1 GCD x 96 GB: ceil(192 / 64) = 3 slices; per node ceil(96 / 64) = 2, x 2 = 4
    bill = estimate(job(nodes=2, cpus_per_task=None, mem="96G"), LUMI)
    assert (bill.reason, bill.gpu_hours_per_hour, bill.per_node_gpu_hours_per_hour) == ("memory", 1.5, 2.0)
    even = job(nodes=2, gpus_per_node=2, ntasks_per_node=2, mem_per_gpu="60G")
    bill = estimate(even, LUMI)
    assert (bill.gpu_hours_per_hour, bill.per_node_gpu_hours_per_hour, bill.rounding_note()) == (2.0, None, None)
    assert not any(line.startswith("rounding:") for line in billing_lines(even, LUMI))


def test_the_rule_line_says_the_totals_are_the_jobs():
    lines = billing_lines(job(nodes=2, cpus_per_task=9), LUMI)
    assert any(line.startswith("rule:") and "all nodes together" in line for line in lines)
    assert any(line.startswith("rounding:") for line in lines)


# --- explain lines that agree with the cost line ---------------------------------------------------------------------

def test_cores_and_memory_lines_say_what_the_bill_counts_not_that_any_more_costs_more():
    command = render_srun(job(cpus_per_task=8, mem_per_gpu="62G"), LUMI)
    cores, memory = why(command, "--cpus-per-task"), why(command, "--mem-per-gpu")
    assert "cores / 8, rounded up" in cores and "up to 8 per GCD cost no more" in cores
    assert "memory / 64 GB, rounded up" in memory and "60 GB per GCD" in memory
    assert "more is billed as more GCDs" not in cores + memory
    assert estimate(job(cpus_per_task=8, mem_per_gpu="62G"), LUMI).gpu_hours == 0.5  # 8 cores, 62 GB: one GCD


def test_on_whole_nodes_cores_and_memory_do_not_change_the_bill_and_exclusive_says_it_bills_the_node():
    whole = job(gpus_per_node=2, ntasks_per_node=2, exclusive=True, cpu_bind="auto", mem_per_gpu="60G")
    command = render_srun(whole, LUMI)
    assert "the whole node is billed" in why(command, "--cpus-per-task")
    assert "the whole node is billed" in why(command, "--mem-per-gpu")
    assert "billed as whole nodes (8 GCDs each) even on small-g" in why(command, "--exclusive")
    bill = estimate(whole, LUMI)
    assert bill.gpu_hours == 4.0 and bill.text().endswith("the whole node: --exclusive)")
    assert any("drop --exclusive for fewer" in w for w in bill.warnings)
    assert estimate(job(partition="standard-g", gpus_per_node=8), LUMI).text().endswith("exclusive partition)")


# --- warnings ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("word", ["$MASTER_ADDR:$MASTER_PORT", "${MASTER_ADDR}:29500", "tcp://$MASTER_ADDR:1234"])
def test_a_literal_master_addr_is_warned_about_with_the_placeholders(word):
    (line,) = advice(job().with_(command=("python", "t.py", "--dist-url", word)), LUMI)
    assert "$MASTER_ADDR" in line and "literally" in line and "{master_addr}:{master_port}" in line


def test_the_placeholders_themselves_and_other_variables_are_not_warned_about():
    assert advice(job().with_(command=("python", "t.py", "--addr", "{master_addr}:{master_port}")), LUMI) == []
    assert advice(job().with_(command=("python", "t.py", "--out", "$HOME/x", "--ranks", "$RANKS")), LUMI) == []
    (line,) = advice(job().with_(command=("python", "t.py", "--rank", "$LOCAL_RANK")), LUMI)
    assert "{local_rank}" in line and "{master_addr}" not in line


def test_standard_g_eight_tasks_with_seven_cores_and_no_binding_is_warned_with_the_fix():
    eight = dict(partition="standard-g", gpus_per_node=8, ntasks_per_node=8, cpus_per_task=7)
    (line,) = advice(job(**eight), LUMI)
    assert "no CPU binding" in line and "--cpu-bind=auto" in line and "cores 49-55" in line
    assert advice(job(**eight, cpu_bind="auto"), LUMI) == []
    # a shared node cannot take masks: no such warning there
    assert not any("CPU binding" in a for a in advice(job(gpus_per_node=2, ntasks_per_node=2), LUMI))


def test_the_warning_reaches_the_command_line(capsys):
    assert main(["srun", "--site", "lumi", "-A", "p", "-t", "1:00:00", "-p", "standard-g", "--gpus-per-node", "8",
                 "--ntasks-per-node", "8", "-c", "7", "--", "python", "t.py", "$MASTER_ADDR"]) == 0
    err = capsys.readouterr().err
    assert "no CPU binding" in err and "{master_addr}:{master_port}" in err


# --- explain: what is left out, and attach --------------------------------------------------------------------

def test_explain_of_a_multi_node_job_says_why_gdr_level_phb_is_left_out(capsys):
    two = job(partition="standard-g", nodes=2, gpus_per_node=8, ntasks_per_node=8, cpu_bind="auto")
    (line,) = left_out_lines(two, LUMI)
    assert line.startswith("left out: NCCL_NET_GDR_LEVEL=PHB: ") and "hang" in line and "#30" in line
    assert "NCCL_NET_GDR_LEVEL" not in render_srun(two, LUMI).text()
    assert left_out_lines(two.with_(env_recipes=("rccl-gdr",)), LUMI) == []
    assert "NCCL_NET_GDR_LEVEL" in render_srun(two.with_(env_recipes=("rccl-gdr",)), LUMI).text()
    assert left_out_lines(job(), LUMI) == []  # one node: RCCL does not use the network
    assert main(["sbatch", "--site", "lumi", "-A", "p", "-t", "1:00:00", "-p", "standard-g", "-N", "2",
                 "--gpus-per-node", "8", "--ntasks-per-node", "8", "-c", "7", "--cpu-bind", "auto", "--explain",
                 "--", "python", "t.py"]) == 0
    assert "left out: NCCL_NET_GDR_LEVEL=PHB" in capsys.readouterr().out


def test_attach_is_one_task_on_one_node(capsys):
    assert attach_argv(42)[:5] == ["srun", "--jobid=42", "--overlap", "-N1", "-n1"]
    assert main(["attach", "42", "--", "rocm-smi"]) == 0
    assert capsys.readouterr().out.strip() == "srun --jobid=42 --overlap -N1 -n1 --pty rocm-smi"
