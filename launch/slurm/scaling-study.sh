#!/bin/bash
# A strong-scaling study on Slurm: submits launch/slurm/train.sbatch once per node count with the same
# model, data, steps and global batch (MICRO_BATCH x accumulation steps x ranks), so the runs differ
# only in how many ranks share each step; then compares their metrics.
#
#   launch/slurm/scaling-study.sh [NODES...]          submit (default node counts: 1 2 4)
#   DRY_RUN=1 launch/slurm/scaling-study.sh 1 2 4 8    print the sbatch commands, submit nothing
#   launch/slurm/scaling-study.sh --summarize DIR      once the jobs are done: one line per run
#
# RANKS_PER_NODE (default 2) and CPUS_PER_RANK (default 8) set every run's layout. Every setting
# train.sbatch reads from the environment passes through (GLOBAL_BATCH, MICRO_BATCH, STEPS, DATA,
# VAL_DATA, MODEL_FLAGS, DTYPE, SEQ_LEN, ...). Results go to out/scaling-<date>/<N>nodes/, or STUDY=DIR.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ "${1:-}" = "--summarize" ]; then
  dir=${2:?usage: $0 --summarize DIR}
  command -v jq >/dev/null || { echo "--summarize needs jq" >&2; exit 2; }
  printf '%-8s %6s %8s %12s %14s %14s %10s\n' run steps "tok/s" "step ms" "comm wait ms" "MiB sent/step" "last loss"
  for m in "$dir"/*/metrics.jsonl; do
    [ -s "$m" ] || continue
    # Skips the first 5 steps: warm-up, and stage 3's first pass, which traces the order it prefetches in.
    jq -rs --arg run "$(basename "$(dirname "$m")")" '
      [.[] | select(.tokens_per_s != null)] as $all | ($all | .[5:]) as $s
      | if ($s | length) == 0 then "\($run): fewer than 6 steps" else
        [$run, ($s | length), ($s | map(.tokens_per_s) | add / length),
         ($s | map(.ms.step) | add / length), ($s | map(.ms.comm_wait) | add / length),
         ($s | map([.comm[].bytes_sent] | add) | add / length / 1048576), ($all | last | .loss)]
        | "\(.[0])\t\(.[1])\t\(.[2] | floor)\t\(.[3] * 10 | round / 10)\t\(.[4] * 10 | round / 10)\t\(.[5] * 100 | round / 100)\t\(.[6] * 10000 | round / 10000)"
        end' "$m"
  done | sort -n | awk -F'\t' 'NF == 7 { printf "%-8s %6s %8s %12s %14s %14s %10s\n", $1, $2, $3, $4, $5, $6, $7; next } { print }'
  exit 0
fi

NODES=("$@")
[ ${#NODES[@]} -gt 0 ] || NODES=(1 2 4)
RANKS_PER_NODE=${RANKS_PER_NODE:-2}
CPUS_PER_RANK=${CPUS_PER_RANK:-8}
export GLOBAL_BATCH=${GLOBAL_BATCH:-32} MICRO_BATCH=${MICRO_BATCH:-4} STEPS=${STEPS:-200}
STUDY=${STUDY:-$PWD/out/scaling-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$STUDY"   # Slurm does not create the --output directory

for n in "${NODES[@]}"; do
  ranks=$(( n * RANKS_PER_NODE ))
  if (( GLOBAL_BATCH % (MICRO_BATCH * ranks) != 0 )); then
    echo "skipping $n nodes: GLOBAL_BATCH $GLOBAL_BATCH is not a multiple of MICRO_BATCH x ranks = $MICRO_BATCH x $ranks" >&2
    continue
  fi
  cmd=(sbatch --parsable --nodes="$n" --ntasks-per-node="$RANKS_PER_NODE" --cpus-per-task="$CPUS_PER_RANK"
       --job-name="tz-scale-${n}n" --output="$STUDY/${n}nodes-%j.out"
       --export="ALL,OUT_DIR=$STUDY/${n}nodes" launch/slurm/train.sbatch)
  if [ -n "${DRY_RUN:-}" ]; then
    printf '%q ' "${cmd[@]}"; echo
  else
    echo "$n nodes x $RANKS_PER_NODE ranks, $(( GLOBAL_BATCH / (MICRO_BATCH * ranks) )) accumulation steps: job $("${cmd[@]}")"
  fi
done
echo "when the jobs are done: $0 --summarize $STUDY"
