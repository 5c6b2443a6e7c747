#!/usr/bin/env bash
# Progress lines for long work that is not a step (issue 32): `data prepare`, a checkpoint's save, its
# verification and restore on resume, `ckpt export` (one file and a Hugging Face folder), --init-from
# and --save-hf each draw one, with bytes done, the rate and the time left. On a terminal (a pty made
# by `script`) the line is drawn in place and wiped; in a pipe, under Slurm (SLURM_JOB_ID) or with
# TZ_PROGRESS=0 nothing is drawn; TZ_PROGRESS=1 writes whole lines anywhere.
# usage: progress_lines.sh TIERZERO   (the terminal cases skip, exit 77, without util-linux's `script`)
set -u
tierzero=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "progress_lines.sh: FAIL: $*"; exit 1; }
cd "$d" || exit 1
printf 'some text to tokenise, line %s\n' $(seq 20000) > text.txt
# has FILE REGEX WHAT: FILE holds a line matching REGEX.
has() { grep -Eq -- "$2" "$1" || { cat "$1"; fail "$3: no line matching /$2/"; }; }
lacks() { ! grep -Eq -- "$2" "$1" || { cat "$1"; fail "$3: a line matches /$2/"; }; }
bytes='[0-9.]+ (B|KiB|MiB|GiB)'

TZ_PROGRESS=1 "$tierzero" data prepare --input text.txt --output t.bin > prep.log 2>&1 || { cat prep.log; fail "data prepare"; }
has prep.log "^progress: reading 1 text file: $bytes of $bytes \\(100%\\), [0-9.]+ MB/s \\(done\\)$" "data prepare"
echo "progress_lines.sh: data prepare: $(grep -c '^progress:' prep.log) lines, the last at 100%"

run() {  # LOG ARGS...: tierzero with TZ_PROGRESS=1, exit 0 expected
  local log=$1
  shift
  TZ_PROGRESS=1 "$tierzero" "$@" > "$log" 2>&1 || { cat "$log"; fail "tierzero $*"; }
}
run train.log train --steps 4 --log-every 0 --val-batches 1 --save-dir ck --save-every 2 --save-hf hf
has train.log "^progress: saving checkpoint step-00000002: $bytes of $bytes \\(100%\\).*\\(done\\)$" "save"
has train.log "^progress: writing hf: $bytes of $bytes \\(100%\\).*\\(done\\)$" "--save-hf"
run resume.log train --steps 6 --log-every 0 --val-batches 1 --save-dir ck --resume latest
has resume.log "^progress: verifying checkpoint ck/step-00000004: $bytes of $bytes \\(100%\\).*\\(done\\)$" "resume: verify"
has resume.log "^progress: restoring the Adam moments from ck/step-00000004: $bytes of $bytes \\(100%\\).*\\(done\\)$" "resume: restore"
run export.log ckpt export ck --to model.safetensors
has export.log "^progress: verifying checkpoint ck/step-00000006: .*\\(100%\\).*\\(done\\)$" "ckpt export: verify"
has export.log "^progress: writing model.safetensors: $bytes of $bytes \\(100%\\).*\\(done\\)$" "ckpt export"
run export_hf.log ckpt export ck --format hf --to hf2
has export_hf.log "^progress: writing hf2: .*\\(100%\\).*\\(done\\)$" "ckpt export --format hf"
run init.log train --steps 1 --log-every 0 --val-batches 1 --init-from hf
has init.log "^progress: loading hf/model.safetensors: $bytes of $bytes \\(100%\\).*\\(done\\)$" "--init-from"
echo "progress_lines.sh: save, verify, restore, export (file and folder), --init-from and --save-hf each drew a line to 100%"

# Not a terminal: nothing, and no carriage return.
"$tierzero" data prepare --input text.txt --output t2.bin > pipe.log 2>&1 || fail "data prepare in a pipe"
lacks pipe.log "progress|reading 1 text file|"$'\r' "a pipe"
command -v script > /dev/null || { echo "progress_lines.sh: skipped: no util-linux script to make a terminal"; exit 77; }
# On a terminal: drawn in place (carriage return, erase to the end of the line), then wiped.
script -qec "'$tierzero' data prepare --input text.txt --output t3.bin" /dev/null > tty.log 2>&1 || fail "data prepare on a terminal"
has tty.log $'\r\033\\[Kreading 1 text file: ' "a terminal"
lacks tty.log "^progress:" "a terminal"
grep -q $'\r\033\\[Kwrote ' tty.log || { cat -A tty.log; fail "a terminal: the line was not wiped before the next output"; }
SLURM_JOB_ID=1 script -qec "'$tierzero' data prepare --input text.txt --output t4.bin" /dev/null > slurm.log 2>&1 || fail "under Slurm"
lacks slurm.log "reading 1 text file" "under Slurm"
TZ_PROGRESS=0 script -qec "'$tierzero' data prepare --input text.txt --output t5.bin" /dev/null > off.log 2>&1 || fail "TZ_PROGRESS=0"
lacks off.log "reading 1 text file" "TZ_PROGRESS=0"
echo "progress_lines.sh: a terminal draws and wipes the line; a pipe, Slurm and TZ_PROGRESS=0 draw nothing"
