"""When sbatch refuses a job for a reason whose fix Slurm does not print, lumikit adds the fix for the site."""
from __future__ import annotations

import getpass

from lumikit.launch.slurm import rejection_hint

INVALID = "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified"


def test_on_lumi_an_unknown_account_points_to_the_learners_projects() -> None:
    hint = rejection_hint(INVALID, "lumi")
    assert "lumi-workspaces" in hint and "--account" in hint


def test_on_lumi_sim_it_says_how_root_gives_this_user_an_account() -> None:
    assert f"LUMIKIT_SLURM_USERS=root,{getpass.getuser()} make slurm-up" in rejection_hint(INVALID, "lumi-sim")


def test_a_refusal_slurm_explains_itself_gets_nothing_added() -> None:
    assert rejection_hint("sbatch: error: invalid partition specified: nope", "lumi") == ""
