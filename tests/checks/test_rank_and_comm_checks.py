"""The checks of the lessons on ranks, GCD pairs, the communication baseline and hangs (01.4, 07.7, 08.5, 08.6):
the right answer passes, each declared wrong answer fails, and a few other mistakes fail with a useful message."""
from __future__ import annotations

import inspect
from types import SimpleNamespace

import pandas as pd
import pytest

from lumikit.checks import CheckFailed
from lumikit.checks import m01, m07, m08
from lumikit.checks.framework import check_info
from lumikit.jobs import spec
from lumikit.jobs.ranks import rank_table
from lumikit.logs.collbench import gcds_of, is_generated, link_for, parse_collbench

RULE_JOB = spec(["python", "train.py"], partition="standard-g", gpus_per_node=8, ntasks_per_node=8, cpus_per_task=7,
                cpu_bind="auto", time="0:30:00")


def wrong_answers_fail(func, **right) -> int:
    """The right answer passes and every declared wrong answer fails; returns how many were tried."""
    info = check_info(func)
    assert info is not None and len(info.wrong) >= 2
    assert func(**right)
    arguments = SimpleNamespace(**inspect.signature(func).bind(**right).arguments)
    for case in info.wrong:
        answers = {**right, **{k: v(arguments) if callable(v) else v for k, v in case.answers.items()}}
        with pytest.raises(CheckFailed):
            func(**answers)
    return len(info.wrong)


def test_01_4_rank_rule():
    r = m01.rank_to_check()
    mask = rank_table(RULE_JOB, "lumi").loc[r, "mask"]
    assert wrong_answers_fail(m01.check_rank_rule, rule_job=RULE_JOB, rank_mask=mask) == 6
    assert m01.check_rank_rule(RULE_JOB, "0x" + mask.rjust(16, "0"))  # Slurm's spelling of the same mask is fine
    with pytest.raises(CheckFailed, match="hex digits"):
        m01.check_rank_rule(RULE_JOB, "cores 1-7")
    with pytest.raises(CheckFailed, match="No answer yet for 01.4"):
        m01.check_rank_rule(RULE_JOB, None)


def test_07_7_gcd_pair_from_a_generated_output():
    output = m07.pair_output()
    assert is_generated(output)
    bench = parse_collbench(output)
    verdict = link_for(bench, "lumi")
    right = dict(pair_gcds=sorted(gcds_of(bench, "lumi").values()), pair_link=verdict.link,
                 busbw_fraction=verdict.fraction)
    assert right["pair_gcds"] != [0, 1]  # the pairs offered never coincide with the job's device numbers
    assert wrong_answers_fail(m07.check_gcd_pair, **right) == 4
    with pytest.raises(CheckFailed, match="should name a link"):
        m07.check_gcd_pair(right["pair_gcds"], "xgmi", right["busbw_fraction"])


def test_08_5_baseline_and_08_6_hang():
    outputs = m08.baseline_outputs()
    one, two = (parse_collbench(outputs[k]) for k in ("one_node", "two_nodes"))
    assert one.peak.busbw > two.peak.busbw  # inside an MI250X, far above one NIC
    assert wrong_answers_fail(m08.check_comm_baseline, node_busbw=one.peak.busbw, cross_busbw=two.peak.busbw,
                              bottleneck=link_for(two, "lumi").link) == 4
    hang = pd.DataFrame(m08.hang_records()).set_index("rank")
    assert (hang["state"] == "started").sum() == len(hang) - 1
    right = dict(recorder_env=dict(m08.RECORDER_ENV), missing_rank=int(hang["collective_seq_id"].idxmin()),
                 stuck_seq=int(hang["collective_seq_id"].max()))
    assert wrong_answers_fail(m08.check_hang, **right) == 4
    with pytest.raises(CheckFailed, match="No answer yet for 08.6"):
        m08.check_hang(None, None, None)
