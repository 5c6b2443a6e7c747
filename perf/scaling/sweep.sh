#!/usr/bin/env bash
# A real scaling sweep on this machine: `tierzero train` at each rank count and ZeRO stage (and
# offload setting), through mpirun, each run's JSONL metrics collected into OUT/sweep.csv (medians
# over steps 4 to STEPS), a markdown report (OUT/sweep.md) with tokens/s and per-rank efficiency against
# 1 rank, and, with gnuplot, plots of tokens/s and of the step-time split. Weak scaling: the micro-batch
# stays per rank. LAUNCH overrides the launcher prefix per run (inside a Slurm allocation:
# LAUNCH="srun -n %N --mpi=pmix"; across hosts with mpirun: add -x OMP_NUM_THREADS; the two-simulated-host mpirun of
# tests/launch/cluster/); %N in it is replaced by the rank count and %H by "node0:A,node1:B" (the ranks
# split over two hosts).
# usage: perf/scaling/sweep.sh [--tierzero BIN] [--out DIR] [--ranks "1 2 4"] [--stages "0 1 2 3"] [--offload "none cpu"]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tz=${TIERZERO:-$here/../../build/launch/tierzero}
out=out/scaling-sweep ranks="1 2 4" stages="0 1 2 3" offloads="none cpu" report_only=0
steps=${STEPS:-12}
model=(${MODEL_FLAGS:---n-layer 6 --n-embd 384 --n-head 6 --vocab 256 --seq-len 128 --micro-batch 4})
while (($#)); do
  case "$1" in
    --tierzero) tz=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --stages) stages=$2; shift 2 ;;
    --offload) offloads=$2; shift 2 ;;
    --report-only) report_only=1; shift ;;  # rewrite the report and plots from an existing sweep.csv
    *) echo "sweep.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
command -v jq > /dev/null || { echo "sweep.sh needs jq" >&2; exit 2; }
mkdir -p "$out"
cores=$(getconf _NPROCESSORS_ONLN)  # not nproc: it obeys OMP_NUM_THREADS
root=(); [ "$(id -u)" -eq 0 ] && root=(--allow-run-as-root)
csv=$out/sweep.csv
if [ "$report_only" = 0 ]; then
echo "ranks,stage,offload,threads_per_rank,step_ms,tokens_per_s,tokens_per_s_per_rank,forward_ms,backward_ms,optimizer_ms,comm_wait_ms,comm_hidden_fraction,device_mib,host_mib,loss" > "$csv"
for n in $ranks; do
  threads=$(( cores / n > 0 ? cores / n : 1 ))
  for s in $stages; do
    for off in $offloads; do
      flags=("${model[@]}" --zero-stage "$s" --offload-optimizer "$off" --steps "$steps" --log-every 0 --val-batches 1
             --metrics "$out/run.jsonl")
      [ "$s" = 3 ] && flags+=(--param-persistence-threshold 0)
      rm -f "$out/run.jsonl"
      if [ -n "${LAUNCH:-}" ]; then
        launch=${LAUNCH//%N/$n}
        launch=${launch//%H/node0:$((n / 2 > 0 ? n / 2 : 1)),node1:$((n - n / 2))}
        # The launcher forwards OMP_NUM_THREADS (srun does by default; give mpirun -x OMP_NUM_THREADS).
        # shellcheck disable=SC2086
        OMP_NUM_THREADS=$threads $launch "$tz" train "${flags[@]}" > "$out/run.log" 2>&1
      elif [ "$n" = 1 ]; then
        OMP_NUM_THREADS=$threads "$tz" train "${flags[@]}" > "$out/run.log" 2>&1
      else
        mpirun -np "$n" --oversubscribe --bind-to none "${root[@]}" -x OMP_NUM_THREADS=$threads "$tz" train "${flags[@]}" \
          > "$out/run.log" 2>&1
      fi
      # Medians over steps 4..: the first steps warm up (and stage 3's first pass traces its prefetch order).
      jq -rs --arg n "$n" --arg s "$s" --arg off "$off" --arg t "$threads" '
        def med: sort | .[(length - 1) / 2 | floor];
        [.[] | select(.tokens_per_s != null)] | .[3:] as $r |
        [$n, $s, $off, $t, ($r | map(.ms.step) | med), ($r | map(.tokens_per_s) | med),
         ($r | map(.tokens_per_s) | med) / ($n | tonumber),
         ($r | map(.ms.forward) | med), ($r | map(.ms.backward) | med), ($r | map(.ms.optimizer) | med),
         ($r | map(.ms.comm_wait) | med), ($r | map(.comm_overlap.hidden_fraction // 0) | med),
         ($r[-1].bytes.device / 1048576), ($r[-1].bytes.host / 1048576), $r[-1].loss] | @csv' "$out/run.jsonl" |
        tr -d '"' >> "$csv"
    done
  done
done
echo "wrote $csv"
fi
report=$out/sweep.md
{
  echo "# Scaling sweep: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $cores cores, $(grep -q amx_bf16 /proc/cpuinfo && echo AMX || echo no AMX)"
  echo
  echo "Model flags: ${model[*]}; $steps steps, medians of steps 4-$steps; threads per rank = cores / ranks."
  echo
  echo "| ranks | stage | offload | step ms | tokens/s | per-rank efficiency | forward | backward | optimizer | comm wait | hidden | device MiB | host MiB |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  awk -F, 'NR > 1 { key = $2 "|" $3; if ($1 == 1 || !(key in base)) if (!(key in base)) base[key] = $7
    hidden = ($11 == 0 && $12 == 1) ? "-" : sprintf("%.0f%%", 100 * $12)  # no communication: nothing to hide
    printf "| %s | %s | %s | %.1f | %.0f | %.0f%% | %.1f | %.1f | %.1f | %.1f | %s | %.1f | %.1f |\n",
      $1, $2, $3, $5, $6, 100 * $7 / base[key], $8, $9, $10, $11, hidden, $13, $14 }' "$csv"
} > "$report"
echo "wrote $report"
if command -v gnuplot > /dev/null; then
  series=()
  for s in $stages; do for off in $offloads; do
    f="$out/.s$s-$off.dat"
    awk -F, -v s="$s" -v o="$off" 'NR > 1 && $2 == s && $3 == o {print $1, $6}' "$csv" > "$f"
    [ -s "$f" ] && series+=("\"$f\" using 1:2 with linespoints title \"stage $s, optimizer on ${off/none/device}\"")
  done; done
  plot=$(IFS=,; echo "${series[*]}")
  # Per-rank efficiency against the smallest rank count of the same stage and offload.
  eff=()
  for s in $stages; do for off in $offloads; do
    f="$out/.e$s-$off.dat"
    awk -F, -v s="$s" -v o="$off" 'NR > 1 && $2 == s && $3 == o { if (!b) b = $7; print $1, 100 * $7 / b }' "$csv" > "$f"
    [ -s "$f" ] && eff+=("\"$f\" using 1:2 with linespoints title \"stage $s, optimizer on ${off/none/device}\"")
  done; done
  effplot=$(IFS=,; echo "${eff[*]}")
  gnuplot <<GP
set terminal pngcairo size 900,560
set output "$out/efficiency.png"
set title "per-rank efficiency against the smallest rank count (this machine)"
set logscale x 2
set xlabel "ranks"
set ylabel "% of the smallest run's tokens/s per rank"
set yrange [0:*]
set key right top
plot $effplot
GP
  awk -F, 'NR > 1 {print $1 "r-s" $2 ($3 == "cpu" ? "-cpu" : ""), $13, $14}' "$csv" > "$out/.mem.dat"
  gnuplot <<GP
set terminal pngcairo size 1100,560
set output "$out/memory.png"
set title "memory per rank and tier (MiB): device and host"
set style data histograms
set style histogram clustered
set key outside right top
set style fill solid 0.8
set xtics rotate by -45
set ylabel "MiB"
plot "$out/.mem.dat" using 2:xtic(1) title "device", "" using 3 title "host tier"
GP
  gnuplot <<GP
set terminal pngcairo size 900,560
set output "$out/tokens-per-s.png"
set title "tokens/s against ranks (this machine, weak scaling)"
set logscale x 2
set xlabel "ranks"
set ylabel "tokens/s (all ranks)"
set key left top
plot $plot
GP
  awk -F, 'NR > 1 {print $1 "r-s" $2 ($3 == "cpu" ? "-cpu" : ""), $8, $9, $10, $11}' "$csv" > "$out/.split.dat"
  gnuplot <<GP
set terminal pngcairo size 1100,560
set output "$out/step-split.png"
set title "step time split (ms): forward, backward, optimizer; comm wait is inside them"
set style data histograms
set style histogram rowstacked
set key outside right top
set style fill solid 0.8
set xtics rotate by -45
set ylabel "ms"
plot "$out/.split.dat" using 2:xtic(1) title "forward", "" using 3 title "backward", "" using 4 title "optimizer"
GP
  rm -f "$out"/.*.dat
  echo "plots: $out/tokens-per-s.png $out/efficiency.png $out/step-split.png $out/memory.png"
fi
