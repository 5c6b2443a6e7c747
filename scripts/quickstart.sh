#!/usr/bin/env bash
# The first command of README.md: install dependencies, build, and run the main job on the embedded
# default: a small GPT trained with ZeRO stage 3 across 2 MPI ranks, its optimizer states offloaded to
# the host tier (ZeRO-Offload), on the built-in corpus (the license texts in /usr/share/common-licenses).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
# tierzero on PATH (/usr/local/bin), so README's `tierzero ...` commands run as typed from any folder.
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO cmake --install build
mkdir -p out
# A rerun is a new run, and --metrics refuses a file holding another run's records: the last run's go.
rm -f out/quickstart-metrics.jsonl
ROOT_FLAG=""
if [ "$(id -u)" -eq 0 ]; then ROOT_FLAG="--allow-run-as-root"; fi  # Open MPI refuses root without it
THREADS=$(( $(nproc) / 2 ))
if [ "$THREADS" -lt 1 ]; then THREADS=1; fi
# A 4-block GPT (0.8M parameters, byte vocabulary); each rank trains on its own 4 x 128 tokens per
# step (a global batch of 8 sequences), parameters, gradients and optimizer states sharded in two.
# --bind-to none: Open MPI would pin each rank to one core, and its OpenMP threads with it.
mpirun -np 2 --oversubscribe --bind-to none $ROOT_FLAG -x OMP_NUM_THREADS="$THREADS" \
  tierzero train --zero-stage 3 --offload-optimizer cpu --model tiny --n-layer 4 --n-head 4 --n-embd 128 \
  --seq-len 128 --micro-batch 4 --steps 1000 --lr 2e-3 --warmup 50 --lr-schedule cosine --min-lr 2e-4 \
  --log-every 50 --val-every 250 --metrics out/quickstart-metrics.jsonl --save-safetensors out/quickstart.safetensors
# Its plots and one page: out/quickstart-metrics-report/report.html.
tierzero report out/quickstart-metrics.jsonl
