#!/usr/bin/env bash
# The course's first real GPU evidence (issue 32), in one go on a machine with one GPU and no Slurm:
#   bash benchmarks/gpu_evidence.sh OUT [LIMIT_S]       (QUICK=1: a few steps each, to try the script on a CPU)
# Writes OUT/ev/ (run folders, ladders, inference, overhead, ceilings, logs, SOURCE.txt) and packs it after every
# step into OUT/evidence.tar.gz, so a step that runs out of time still leaves everything before it. Steps run in the
# order of what matters most; each has its own time limit and the whole script keeps within LIMIT_S (default 420).
# Traces and records are read afterwards on the CPU machine (lumikit trace ..., HTA) and shipped with
# `lumikit reference add`; nothing here is generated: every number comes from the GPU it names.
set -u
OUT=${1:?usage: gpu_evidence.sh OUT [LIMIT_S]}
LIMIT=${2:-420}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
EV="$OUT/ev"
mkdir -p "$EV"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" LUMIKIT_RUNS_DIR="$EV/runs" PYTHONUNBUFFERED=1
SITE=nvidia-h100  # lumikit/sites/nvidia-h100.toml
START=$(date +%s)
DEADLINE=$((START + LIMIT))
if [ "${QUICK:-0}" = 1 ]; then S=1; else S=0; fi
pick() { if [ "$S" = 1 ]; then echo "$1"; else echo "$2"; fi; }  # pick QUICK_VALUE FULL_VALUE

pack() {  # two packs (each file that comes back may hold 16 MiB): the ladders' per-rung traces apart from the rest
  tar -czf "$OUT/evidence.tar.gz.part" -C "$OUT" --exclude='*/ladder/*/trace' ev && mv "$OUT/evidence.tar.gz.part" "$OUT/evidence.tar.gz"
  (cd "$OUT" && find ev -path '*/ladder/*/trace/*' -type f | tar -czf ladder-traces.tar.gz.part -T - \
    && mv ladder-traces.tar.gz.part ladder-traces.tar.gz)
}

step() {  # step NAME SECONDS CMD...: run CMD within its limit and the script's, log it, pack (ONLY="A B": just those)
  local name=$1 want=$2; shift 2
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then return; fi
  local left=$((DEADLINE - $(date +%s) - 10))
  if [ "$left" -lt 20 ]; then echo "SKIPPED $name: out of time" | tee -a "$EV/steps.txt"; return; fi
  local lim=$(( want < left ? want : left )) t0=$(date +%s) rc=0
  echo "== $name (limit ${lim}s)"
  timeout -k 5 "$lim" "$@" >"$EV/$name.log" 2>&1 || rc=$?
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a "$EV/steps.txt"
  tail -n "${TAIL:-6}" "$EV/$name.log"
  pack
}

{
  echo "machine: $(nvidia-smi -L 2>/dev/null || echo 'no nvidia-smi')"
  echo "driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null || echo '-')"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: ${EVIDENCE_COMMIT:-unknown}"
  echo "command: bash benchmarks/gpu_evidence.sh OUT $LIMIT"
  echo "host: $(hostname); cpus: $(nproc); kernel: $(uname -r)"
  $PY -c 'import torch, sys; print("python:", sys.version.split()[0], "torch:", torch.__version__, "cuda:", torch.version.cuda, "sees GPU:", torch.cuda.is_available())'
  echo "licence: the project's own (MIT)"
} >"$EV/SOURCE.txt" 2>&1
cat "$EV/SOURCE.txt"
nvidia-smi >"$EV/nvidia-smi.txt" 2>&1 || true

RUN=("$PY" -m lumikit run --site "$SITE" --gpus-per-node 1 --gpu-record-interval 0.5 --wait --quiet)
RESNET=(python -m lumikit.workloads.resnet --model-size "$(pick tiny resnet18)" --batch-size "$(pick 16 256)"
        --samples "$(pick 2000 50000)" --workers 4 --no-progress)
LM=(python -m lumikit.workloads.lm --model-size "$(pick tiny medium)" --batch-size "$(pick 8 64)" --no-progress)

# 1. the GPU record of a training run, and its report card
step record-resnet 120 "${RUN[@]}" -J record-resnet -- "${RESNET[@]}" --steps "$(pick 20 600)"
step card-resnet 30 bash -c "$PY -m lumikit report \"\$(ls -d $EV/runs/*record-resnet* | head -1)\""
# 2. the same run profiled: a real Kineto trace (CUDA sync events asked for), a few steps
step profile-resnet 90 "${RUN[@]}" --profile torch --profile-steps 5 -J profile-resnet -- "${RESNET[@]}" --steps 40
step profile-lm 60 "${RUN[@]}" --profile torch --profile-steps 5 -J profile-lm -- "${LM[@]}" --steps 40
# 3. the ceilings this card reaches (for reading MFU)
step ceilings 60 "$PY" "$ROOT/benchmarks/gpu_evidence/ceilings.py" --json "$EV/ceilings.json"
# 4. the optimisation ladder on the ResNet (every rung that runs on this GPU)
step ladder-resnet 150 "$PY" -m lumikit ladder --site "$SITE" --model resnet --size "$(pick tiny resnet18)" \
  --batch-size "$(pick 16 256)" --rungs fp32,bf16,channels-last,fused,compile --steps "$(pick 2 10)" \
  --repeats "$(pick 2 5)" --warmup "$(pick 1 5)" --workers 4 --wait --quiet
# 4b. the same with three times the loader processes: is the ResNet's ladder held back by its input pipeline?
step ladder-resnet-w12 150 "$PY" -m lumikit ladder --site "$SITE" --model resnet --size "$(pick tiny resnet18)" \
  --batch-size "$(pick 16 256)" --rungs fp32,bf16,channels-last,fused,compile --steps "$(pick 2 10)" \
  --repeats "$(pick 2 5)" --warmup "$(pick 1 5)" --workers "$(pick 2 12)" --wait --quiet
# 5. inference: prefill and decode tokens/s with and without a KV cache, across batches
step inference 60 bash -c "cd $EV && mkdir -p inference && $PY -m lumikit.workloads.lm --generate --model-size $(pick tiny medium) \
  --batch-sizes $(pick 1,4 1,8,32,128) --prompt-tokens $(pick 16 128) --new-tokens $(pick 8 64) --generate-repeats $(pick 2 5) \
  --device auto --out inference"
# 6. the language model's GPU record
step record-lm 60 "${RUN[@]}" -J record-lm -- "${LM[@]}" --steps "$(pick 20 400)"
# 7. the profiler wrapper's overhead outside the profiled steps (interleaved pairs)
step overhead 240 "$PY" "$ROOT/benchmarks/bench_profiler_overhead.py" --model resnet --steps "$(pick 30 120)" \
  --skip "$(pick 10 20)" --pairs "$(pick 2 ${OVERHEAD_ROUNDS:-3})" --variants "${OVERHEAD_VARIANTS:-profiled,profiled-keep-cupti}" --batch-size "$(pick 16 256)" --json "$EV/overhead.json" \
  -- --samples "$(pick 2000 50000)" --workers 4
# 8. the language model's ladder (launch-bound at this size: compile should matter most)
step ladder-lm 120 "$PY" -m lumikit ladder --site "$SITE" --model lm --size "$(pick tiny medium)" \
  --batch-size "$(pick 8 64)" --rungs fp32,bf16,fused,compile --steps "$(pick 2 10)" --repeats "$(pick 2 5)" \
  --warmup "$(pick 1 5)" --wait --quiet
echo "done in $(( $(date +%s) - START ))s"; cat "$EV/steps.txt"
pack
ls -la "$OUT"
