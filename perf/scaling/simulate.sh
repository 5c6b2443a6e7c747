#!/usr/bin/env bash
# The simulated scaling study: `tierzero plan --json` (the memory plan and the step-time model) for
# gpt2-xl, a 13B and a 70B GPT shape at ZeRO stages 1-3, from 8 to 1024 ranks, weak scaling (each rank
# keeps its micro-batch: the global batch grows) and strong scaling (the global batch stays at
# GLOBAL sequences: accumulation shrinks as ranks grow), on HARDWARE (default h100-80g: 8 GPUs per node,
# NVLink inside, 400 Gb/s per GPU between nodes). Writes OUT/simulated.csv, OUT/simulated.md (where each
# stage stops scaling and why) and, with gnuplot, PNG plots.
# usage: perf/scaling/simulate.sh [--tierzero BIN] [--hardware H] [--out DIR] [--worlds "8 16 ..."] [--models "gpt2-xl 13b 70b"]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tz=${TIERZERO:-$here/../../build/launch/tierzero}
hardware=h100-80g out=out/scaling-simulated worlds="8 16 32 64 128 256 512 1024" models="gpt2-xl 13b 70b"
global=${GLOBAL:-1024}
while (($#)); do
  case "$1" in
    --tierzero) tz=$2; shift 2 ;;
    --hardware) hardware=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --worlds) worlds=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    *) echo "simulate.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
command -v jq > /dev/null || { echo "simulate.sh needs jq (apt-get install jq)" >&2; exit 2; }
mkdir -p "$out"
model_flags() {
  case "$1" in
    gpt2-xl) echo "--model gpt2-xl --seq-len 1024" ;;
    13b) echo "--n-layer 40 --n-embd 5120 --n-head 40 --vocab 50257 --seq-len 2048" ;;
    70b) echo "--n-layer 80 --n-embd 8192 --n-head 64 --vocab 50257 --seq-len 2048 --max-live-parameters 2e9" ;;
    *) echo "simulate.sh: unknown model $1" >&2; exit 2 ;;
  esac
}
csv=$out/simulated.csv
echo "model,stage,mode,world,nodes,micro_batch,grad_accum,fits,device_gib,host_gib,step_ms,compute_ms,comm_ms,comm_exposed_ms,optimizer_ms,tokens_per_s,tokens_per_s_per_rank,mfu" > "$csv"
for m in $models; do
  for stage in 1 2 3; do
    for mode in weak strong; do
      for w in $worlds; do
        if [ "$mode" = weak ]; then mb=4 accum=1; else mb=1 accum=$(( global / w > 0 ? global / w : 1 )); fi
        # shellcheck disable=SC2046
        j=$("$tz" plan $(model_flags "$m") --dtype bf16 --checkpoint-activations --zero-stage "$stage" \
              --micro-batch "$mb" --grad-accum "$accum" --world "$w" --rank 0 --hardware "$hardware" --json || true)
        echo "$j" | jq -r --arg m "$m" --arg s "$stage" --arg mode "$mode" --arg w "$w" --arg mb "$mb" --arg ga "$accum" '
          .ranks[0] as $r | (.prediction // {}) as $p |
          [$m, $s, $mode, $w, ($p.nodes // ""), $mb, $ga, ($r.fits | tostring),
           ($r.bytes.device / 1073741824 * 100 | round / 100), ($r.bytes.host / 1073741824 * 100 | round / 100),
           ($p.step_ms // ""), ($p.terms.compute.ms // ""), ($p.terms.communication.ms // ""),
           ($p.terms.communication.exposed_ms // ""), ($p.terms.optimizer.ms // ""),
           ($p.tokens_per_s // ""), (if $p.tokens_per_s then $p.tokens_per_s / ($w | tonumber) else "" end),
           ($p.mfu // "")] | @csv' | tr -d '"' >> "$csv"
      done
    done
  done
done
echo "wrote $csv ($(($(wc -l < "$csv") - 1)) configurations)"

# The report: per model, stage and mode, the per-rank efficiency against the smallest world that fits,
# and the first world where it falls below 80%, with the term that grew.
report=$out/simulated.md
{
  echo "# Simulated scaling: $hardware ($("$tz" plan --hardware "$hardware" --json 2>/dev/null | jq -r '.prediction.hardware // empty'))"
  echo
  echo "tierzero's step-time model (docs/planning.md), bf16 with activation checkpointing; weak scaling:"
  echo "micro-batch 4 per rank; strong scaling: $global sequences per step (micro-batch 1 x accumulation)."
  echo
  echo "| model | stage | mode | fits from | per-rank efficiency at 1024 | stops scaling (< 80%) at | why |"
  echo "|---|---|---|---|---|---|---|"
  awk -F, 'NR > 1 {
      key = $1 "|" $2 "|" $3
      if ($8 != "true") next
      if (!(key in first)) { first[key] = $4; base[key] = $17; order[++n] = key }
      eff = $17 / base[key]; last[key] = eff
      if (eff < 0.8 && !(key in stop)) {
        stop[key] = $4
        why[key] = sprintf("exposed communication %.0f ms against compute %.0f ms per step (%s)", $14, $12,
                           $5 > 1 ? "the job spans " $5 " nodes: collectives run at the network rate" : "inside one node")
      }
    }
    END {
      for (i = 1; i <= n; i++) { k = order[i]; split(k, p, "|")
        printf "| %s | %s | %s | %s ranks | %.0f%% | %s | %s |\n", p[1], p[2], p[3], first[k], 100 * last[k],
               (k in stop ? stop[k] " ranks" : "-"), (k in stop ? why[k] : "scales") }
    }' "$csv"
  echo
  echo "Configurations that never fit the device's memory in this range are left out; see $csv (fits=false)."
} > "$report"
echo "wrote $report"
if command -v gnuplot > /dev/null; then
  for m in $models; do
    for mode in weak strong; do
      series=()
      for s in 1 2 3; do
        f="$out/.$m-$mode-$s.dat"
        awk -F, -v m="$m" -v s="$s" -v mode="$mode" 'NR > 1 && $1 == m && $2 == s && $3 == mode && $8 == "true" {print $4, $16, $17}' "$csv" > "$f"
        [ -s "$f" ] && series+=("\"$f\" using 1:2 with linespoints title \"stage $s\"")
      done
      [ ${#series[@]} -gt 0 ] || continue
      plot=$(IFS=,; echo "${series[*]}")
      eff=()
      for s in 1 2 3; do
        f="$out/.$m-$mode-$s.dat"
        [ -s "$f" ] && eff+=("\"$f\" using 1:(100*\$3/$(head -n 1 "$f" | awk '{print $3}')) with linespoints title \"stage $s\"")
      done
      effplot=$(IFS=,; echo "${eff[*]}")
      gnuplot <<GP
set terminal pngcairo size 900,560
set output "$out/$m-$mode-efficiency.png"
set title "$m, $mode scaling on $hardware (simulated): per-rank efficiency"
set logscale x 2
set xlabel "ranks"
set ylabel "% of the smallest fitting world's tokens/s per rank"
set yrange [0:*]
set key right top
plot $effplot
GP
      gnuplot <<GP
set terminal pngcairo size 900,560
set output "$out/$m-$mode.png"
set title "$m, $mode scaling on $hardware (simulated)"
set logscale x 2
set logscale y
set xlabel "ranks"
set ylabel "tokens/s (all ranks)"
set key left top
plot $plot
GP
    done
  done
  rm -f "$out"/.*.dat
  echo "wrote $(ls "$out"/*.png | wc -l) plots in $out"
else
  echo "gnuplot not installed: no plots (apt-get install gnuplot-nox)"
fi
