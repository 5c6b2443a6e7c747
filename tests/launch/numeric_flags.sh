#!/usr/bin/env bash
# Every numeric flag `tierzero train --help` lists, with each hostile value (-1, 0, 1e10, 1e300, nan, inf,
# 2^64): each run of `tierzero plan` (which takes every train flag and resolves it as train does, without
# training) must end within 2 s, without a crash, either accepted (the plan printed, fitting or not) or
# refused with an error that names the flag. Beyond 0 and 1, a value is accepted only where ACCEPT below
# gives its documented meaning, and such a value must be accepted. A flag is numeric when its default is a
# number; the few whose default is not (byte sizes, text) are classified below, and a flag --help lists
# that no list classifies fails the test, so a new flag cannot go untested.
#
#   numeric_flags.sh TIERZERO
set -u
tierzero=${1:?usage: $0 TIERZERO}

values=(-1 0 1e10 1e300 nan inf 18446744073709551616)
# Byte sizes with a non-numeric default ("unlimited"): tried as numeric flags.
sizes=" device-mem host-mem nvme-mem comm-piece-bytes "
# Text flags (names, paths, modes): not numeric. --straggler-test-delay-ms is RANK:MS, its refusals tested apart
# (launch_train_straggler_delay_refuses_*).
text=" model data val-data init-from save-safetensors save-hf save-hf-dtype metrics lr-schedule dtype activation-dtype device attention-math bind-cores
  save-dir resume config offload-optimizer offload-param overlap-optimizer offload-activations nvme-path numa-mem profile-hardware
  prometheus-textfile straggler-test-delay-ms optimizer-states master-weights "
# flag=value pairs accepted with a documented meaning (docs/configuration.md): -1 takes --offload-ratio;
# a count of 1e10 elements is larger than any group; a shard of 1e10 bytes is 10 GB; a clipping norm or a loss scale of 1e10 or 2^64 is a
# finite float.
accept=" offload-ratio-master=-1 offload-ratio-m=-1 offload-ratio-v=-1
  reduce-bucket-size=1e10 allgather-bucket-size=1e10 prefetch-bucket-size=1e10 max-live-parameters=1e10
  param-persistence-threshold=1e10 save-hf-shard-size=1e10 grad-clip=1e10 grad-clip=18446744073709551616 loss-scale=1e10
  loss-scale=18446744073709551616 min-loss-scale=1e10 min-loss-scale=18446744073709551616 "

text=" $(echo $text) " accept=" $(echo $accept) "  # one space between names
help=$("$tierzero" train --help) || { echo "FAIL: tierzero train --help exited $?"; exit 1; }
failures=0 runs=0 numeric=()
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
while read -r flag default; do
  if [[ "$default" =~ ^-?[0-9]+([.][0-9]+)?(e[+-]?[0-9]+)?$ || "$sizes" == *" $flag "* ]]; then
    numeric+=("$flag")
  elif [[ "$text" != *" $flag "* ]]; then
    fail "--$flag (default '$default') is in no list of numeric_flags.sh: classify it"
  fi
done < <(sed -nE 's/^ +--([a-z0-9-]+) arg( \(=([^)]*)\))?.*/\1 \3/p' <<<"$help")
((${#numeric[@]} >= 40)) || fail "only ${#numeric[@]} numeric flags read from --help: the help format changed?"
for pair in $accept; do
  [[ " ${numeric[*]} " == *" ${pair%%=*} "* ]] || fail "ACCEPT names --${pair%%=*}, which is not a numeric flag"
done

out=$(mktemp "${TMPDIR:-/tmp}/tz_numeric_flags.XXXXXX") || exit 1
trap 'rm -f "$out"' EXIT
for flag in "${numeric[@]}"; do
  for v in "${values[@]}"; do
    runs=$((runs + 1))
    start=$EPOCHREALTIME
    timeout -s KILL 10 "$tierzero" plan "--$flag=$v" >"$out" 2>&1
    rc=$?
    ms=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", (b - a) * 1000 }')
    what="--$flag=$v (exit $rc, $ms ms)"
    if ((ms > 2000)); then fail "$what took more than 2 s"; fi
    if ((rc > 1)); then fail "$what: a crash or a kill, not a refusal: $(tail -c 300 "$out")"; continue; fi
    refused=1
    if ((rc == 0)) || { ((rc == 1)) && grep -q "the plan does not fit" "$out" && ! grep -q "error" "$out"; }; then
      refused=0
    fi
    if ((refused)) && ! grep -Eq -- "--$flag([^a-z0-9-]|$)" "$out"; then
      fail "$what is refused without naming --$flag: $(tail -c 300 "$out")"
    fi
    [[ "$v" == 0 || "$v" == 1 ]] && continue
    if [[ "$accept" == *" $flag=$v "* ]]; then
      ((refused)) && fail "$what is refused, but ACCEPT documents it: $(tail -c 300 "$out")"
    else
      ((refused)) || fail "$what is accepted; only ACCEPT's documented values may be"
    fi
  done
done
echo "numeric_flags: ${#numeric[@]} numeric flags, $runs runs, $failures failure(s)"
((failures == 0))
