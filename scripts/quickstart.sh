#!/usr/bin/env bash
# The first command of README.md: install dependencies, build, and run the main job on the embedded
# default (a small GPT trained on the built-in corpus, the license texts in /usr/share/common-licenses).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
mkdir -p out
OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)} ./build/launch/tierzero train --model tiny --steps 300 --lr 1e-3 \
  --log-every 25 --metrics out/quickstart-metrics.jsonl --save-safetensors out/quickstart.safetensors
