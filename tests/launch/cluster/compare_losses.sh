#!/usr/bin/env bash
# Compares the per-step training losses of two --metrics files: compare_losses.sh REFERENCE RUN STEPS
# [REL_TOL]. Both must hold exactly STEPS training records (validation records are ignored), and each
# step's loss must be within REL_TOL (default 1e-5) of the reference's, relative to it. Prints one line
# when they agree (with the largest relative difference, and whether they are bitwise equal), both
# loss columns when they do not. Exits 0 when they agree, 1 otherwise.
set -u
(($# == 3 || $# == 4)) || { echo "usage: $0 REFERENCE.jsonl RUN.jsonl STEPS [REL_TOL]" >&2; exit 2; }
ref=$1 run=$2 steps=$3 tol=${4:-1e-5}
# "loss":x of the training records; a validation record has "val_loss", which this does not match.
losses() { grep -o '"loss":[-+0-9.eE]*' "$1" | cut -d: -f2; }
for f in "$ref" "$run"; do
  [ -s "$f" ] || { echo "compare_losses: $f is missing or empty"; exit 1; }
done
paste <(losses "$ref") <(losses "$run") | awk -v steps="$steps" -v tol="$tol" -v ref="$ref" -v run="$run" '
  { n++; a[n] = $1; b[n] = $2
    d = $1 - $2; if (d < 0) d = -d
    r = ($1 != 0) ? d / ($1 < 0 ? -$1 : $1) : d
    rel[n] = r; if (r > worst) worst = r
    if ($1 == "" || $2 == "" || r > tol) bad = 1
    if ($1 "" != $2 "") differ = 1 }
  END {
    if (n != steps) { printf "compare_losses: expected %d steps, found %d\n", steps, n; bad = 1 }
    if (!bad) {
      printf "all %d losses agree: largest relative difference %.2e (tolerance %s)%s\n",
             n, worst, tol, differ ? "" : ", bitwise equal"
      exit 0
    }
    printf "compare_losses: the losses differ beyond %s relative\n", tol
    printf "%5s  %-22s  %-22s  %s\n", "step", "reference", "run", "relative difference"
    for (i = 1; i <= n; i++)
      printf "%5d  %-22s  %-22s  %.2e%s\n", i, a[i], b[i], rel[i], (a[i] == "" || b[i] == "" || rel[i] > tol) ? "  <--" : ""
    printf "reference: %s\nrun:       %s\n", ref, run
    exit 1
  }'
