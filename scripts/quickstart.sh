#!/usr/bin/env bash
# The first command of README.md: install dependencies, build, and run the main job on the embedded
# default (a small GPT trained on the built-in corpus, the license texts in /usr/share/common-licenses).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
mkdir -p out
# A 4-block GPT (0.8M parameters, byte vocabulary), 1000 steps of 8 x 128 tokens: about a minute on 2 cores.
OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)} ./build/launch/tierzero train --model tiny --n-layer 4 --n-head 4 \
  --n-embd 128 --seq-len 128 --micro-batch 8 --steps 1000 --lr 2e-3 --warmup 50 --lr-schedule cosine \
  --min-lr 2e-4 --log-every 50 --val-every 250 --metrics out/quickstart-metrics.jsonl \
  --save-safetensors out/quickstart.safetensors
