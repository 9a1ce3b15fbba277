"""Job specs, their validation against a site, and rendering to srun/salloc/sbatch."""
from .profiling import MODES as PROFILE_MODES
from .render import (Command, Flag, allocation_flags, attach_argv, cpu_masks, effective_binds, payload,
                     rank_script, render_salloc, render_sbatch, render_srun, resolve)
from .ranks import RankPlace, rank_places, rank_table
from .spec import JobSpec, format_time, is_secret, parse_mem_mb, parse_time, spec
from .validate import advice, missing_account, problems, validate
from .workload import WORKLOADS, gcd_resources, workload_spec

__all__ = ["PROFILE_MODES", "Command", "Flag", "JobSpec", "advice", "allocation_flags", "is_secret", "missing_account",
           "attach_argv", "cpu_masks",
           "effective_binds", "format_time", "parse_mem_mb", "parse_time", "payload", "problems", "rank_script",
           "render_salloc", "render_sbatch", "render_srun", "resolve", "spec", "validate", "RankPlace", "rank_places",
           "rank_table", "WORKLOADS", "gcd_resources",
           "workload_spec"]
