# shellcheck shell=bash
# env.sh - point Slurm commands at the lumi-sim cluster.
#   source scripts/slurm-sim/env.sh          # sets SLURM_CONF in this shell
#   eval "$(bash scripts/slurm-sim/env.sh)"  # the same, from a command that prints it
# lumikit does not need this: its site 'lumi-sim' finds the configuration by itself.
_lumikit_sim_conf="${LUMIKIT_SLURM_SIM_DIR:-/tmp/lumikit-slurm-sim}"
_lumikit_sim_conf="${_lumikit_sim_conf%/}/etc/slurm.conf"
if [ ! -f "$_lumikit_sim_conf" ]; then
  echo "lumi-sim has no configuration at $_lumikit_sim_conf: start it with 'make slurm-up'" >&2
fi
if (return 0 2>/dev/null); then
  export SLURM_CONF="$_lumikit_sim_conf"
else
  printf 'export SLURM_CONF=%q\n' "$_lumikit_sim_conf"
fi
unset _lumikit_sim_conf
