#!/usr/bin/env bash
# Runs a command that is expected to end a job (a probe that aborts it) and checks how it ended: its
# exit status, how long it took, and what it printed. ctest registers such probes through it.
#
#   expect_exit.sh --status N|nonzero --max-seconds S [--skip-status K] [--regex ERE]... [--absent-regex ERE]...
#                  -- command args...
#
# The command's stdout and stderr are captured together and printed through. Exits 0 when the status
# matches, the command took at most S seconds (wall time), every --regex matches the output
# (grep -E) and no --absent-regex does; otherwise exits 1, saying which check failed. With
# --skip-status K, a command that exits K (it says it cannot run on this machine) makes this exit K
# too, without checks, so that ctest (SKIP_RETURN_CODE K) reports a skip, never a pass.
# A command expected to fail (a status other than 0) must fail with errors written for people (issue
# 32): no line of its output may hold "check failed", a source position (file.cc:123) or a bracketed C++
# predicate ([a && b], [x == y], [f(x)]); --allow-debug-text lifts this for a test that asks for them
# (--debug, TZ_DEBUG=1) or runs an internal probe.
set -u

usage() {
  echo "usage: $0 --status N|nonzero --max-seconds S [--skip-status K] [--regex ERE]... [--absent-regex ERE]... [--allow-debug-text] -- command args..." >&2
  exit 2
}

status="" max_seconds="" skip_status="" regexes=() absent=() allow_debug=0
while (($#)); do
  case "$1" in
    --status) (($# >= 2)) || usage; status="$2"; shift 2 ;;
    --max-seconds) (($# >= 2)) || usage; max_seconds="$2"; shift 2 ;;
    --skip-status) (($# >= 2)) || usage; skip_status="$2"; shift 2 ;;
    --regex) (($# >= 2)) || usage; regexes+=("$2"); shift 2 ;;
    --absent-regex) (($# >= 2)) || usage; absent+=("$2"); shift 2 ;;
    --allow-debug-text) allow_debug=1; shift ;;
    --) shift; break ;;
    *) echo "$0: unknown argument '$1'" >&2; usage ;;
  esac
done
[[ -n "$status" && -n "$max_seconds" && $# -gt 0 ]] || usage
[[ "$status" == nonzero || "$status" =~ ^[0-9]+$ ]] || { echo "$0: --status must be a number or 'nonzero'" >&2; usage; }
[[ "$max_seconds" =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "$0: --max-seconds must be a number" >&2; usage; }
[[ -z "$skip_status" || "$skip_status" =~ ^[1-9][0-9]*$ ]] || { echo "$0: --skip-status must be a number > 0" >&2; usage; }

out=$(mktemp "${TMPDIR:-/tmp}/expect_exit.XXXXXX") || exit 1
trap 'rm -f "$out"' EXIT

start=$(date +%s.%N)
"$@" >"$out" 2>&1
rc=$?
end=$(date +%s.%N)
cat "$out"
elapsed=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
if [[ -n "$skip_status" ]] && ((rc == skip_status)); then
  echo "expect_exit: skipped (exit status $rc: the command cannot run here, ${elapsed} s)"
  exit "$rc"
fi

failures=()
if [[ "$status" == nonzero ]]; then
  ((rc != 0)) || failures+=("exit status 0, expected non-zero")
else
  ((rc == status)) || failures+=("exit status $rc, expected $status")
fi
awk -v e="$elapsed" -v m="$max_seconds" 'BEGIN { exit !(e <= m) }' ||
  failures+=("took ${elapsed} s, more than the ${max_seconds} s allowed")
for re in "${regexes[@]+"${regexes[@]}"}"; do
  grep -Eq -- "$re" "$out" || failures+=("no output line matches /$re/")
done
for re in "${absent[@]+"${absent[@]}"}"; do
  if grep -Eq -- "$re" "$out"; then
    failures+=("output matches /$re/, which must be absent: $(grep -Em1 -- "$re" "$out")")
  fi
done
# Developer text in a failure's output: what the error-text rule above refuses.
debug_text='check failed|[A-Za-z0-9_]\.(cc|h|cu|cpp):[0-9]+|\[[^]]*(&&|\|\||==|!=|->|::|[A-Za-z_]\()[^]]*\]'
if [[ "$status" != 0 ]] && ((!allow_debug)) && grep -Eq -- "$debug_text" "$out"; then
  failures+=("a failure's output holds developer text (check failed, a source position or a C++ predicate): $(grep -Em1 -- "$debug_text" "$out")")
fi

if ((${#failures[@]})); then
  echo "expect_exit: FAILED: $*" >&2
  for f in "${failures[@]}"; do echo "expect_exit:   $f" >&2; done
  exit 1
fi
echo "expect_exit: ok (exit status $rc, ${elapsed} s)"
exit 0
