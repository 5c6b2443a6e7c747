#!/usr/bin/env bash
# The numa:N tier on a machine with two NUMA nodes, the second memory only (as a CXL memory expander or a
# CPU-less node appears to Linux), made here: Debian's kernel (linux-image-amd64) booted with
# qemu-system-x86_64 (KVM where /dev/kvm lets us, software emulation where it is refused) on a
# debootstrapped Debian root (--variant=minbase, built once under /var/cache/tierzero), with this build's
# tierzero and core_numa_test and the shared libraries they load copied in. In the guest, as its init:
#   1. tierzero doctor: both nodes, node 1 with no CPUs;
#   2. core_numa_test: memory bound to each node has every touched page there (move_pages);
#   3. tierzero train (tiny, ZeRO stage 2, bf16, 6 steps) with the optimizer states on the host tier and
#      on numa:1: the same losses bit for bit, and the kernel finds every page checked on node 1; the same
#      for two nodes in one run (stage 3: optimizer states on numa:1, parameter shards on numa:0) and for
#      half the optimizer states on numa:1 (--offload-ratio 0.5);
#   4. tierzero bench numa: each node's read and write GB/s and the CPU Adam on states there (under
#      software emulation these are the emulator's rates, not the hardware's).
# The guest's console is printed; the script ends with one line: PASS (exit 0) or FAIL: why (exit 1); 77
# (a skip) where it cannot run here (not root, no qemu, no kernel, no mirror for the first root).
#
#   bash perf/scripts/numa_qemu.sh [BUILD_DIR]      default build/ (a CPU build: TZ_CUDA=OFF is enough)
#   TZ_QEMU_ACCEL=kvm                                KVM instead of software emulation (see below)
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$ROOT/build}
[[ "$BUILD" == /* ]] || BUILD=$ROOT/$BUILD
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
log() { printf '[%s] %s\n' "$(date +%T)" "$*"; }

[[ "$(id -u)" == 0 ]] || skip "needs root (debootstrap, and reading /boot/vmlinuz)"
for c in qemu-system-x86_64 debootstrap cpio ldd flock timeout; do
  command -v "$c" >/dev/null || skip "$c is not installed (bash scripts/install-deps.sh installs it)"
done
KERNEL=$(ls /boot/vmlinuz-*-amd64 2>/dev/null | sort -V | tail -n 1)
[[ -n "$KERNEL" && -r "$KERNEL" ]] || skip "no Debian kernel in /boot (apt-get install linux-image-amd64)"
TIERZERO=$BUILD/launch/tierzero NUMA_TEST=$BUILD/tests/core_numa_test
[[ -x "$TIERZERO" && -x "$NUMA_TEST" ]] || fail "build first: no $TIERZERO or $NUMA_TEST (bash scripts/build.sh)"

# ---- the root, built once -----------------------------------------------------------------------------
SUITE=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
MIRROR=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
MIRROR=${MIRROR:-http://deb.debian.org/debian}
CACHE=/var/cache/tierzero BASE=/var/cache/tierzero/numa-root-$SUITE
mkdir -p "$CACHE" || skip "cannot make $CACHE"
exec 9>"$CACHE/numa-qemu.lock"
flock -w 900 9 || fail "another numa_qemu.sh held $CACHE/numa-qemu.lock for 15 minutes"
if [[ ! -f "$BASE/.tierzero-complete" ]]; then
  log "the root: debootstrap --variant=minbase $SUITE $BASE $MIRROR"
  rm -rf "$BASE.part"
  debootstrap --variant=minbase "$SUITE" "$BASE.part" "$MIRROR" >"$CACHE/numa-debootstrap.log" 2>&1 ||
    { tail -n 5 "$CACHE/numa-debootstrap.log"; rm -rf "$BASE.part"; skip "debootstrap failed (no mirror?): $CACHE/numa-debootstrap.log"; }
  date -u +%Y-%m-%dT%H:%M:%SZ >"$BASE.part/.tierzero-complete"
  rm -rf "$BASE" && mv "$BASE.part" "$BASE"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/numa-qemu.XXXXXX") || fail "no temporary folder"
qemu_pid=""
cleanup() { [[ -n "$qemu_pid" ]] && kill "$qemu_pid" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 1' INT TERM
log "the guest's root: $BASE ($(cat "$BASE/.tierzero-complete")), without docs and apt lists, and the binaries"
cp -a "$BASE" "$WORK/root"
rm -rf "$WORK/root"/usr/share/{doc,man,info,locale} "$WORK/root"/var/cache/apt "$WORK/root"/var/lib/apt/lists
mkdir -p "$WORK/root/opt/tz"
cp "$TIERZERO" "$NUMA_TEST" "$WORK/root/opt/tz/"
# The libraries the binaries load, at their paths here (the root is the same Debian release): those the
# root lacks (glibc and the C++ runtime are in it already).
for lib in $(ldd "$TIERZERO" "$NUMA_TEST" | awk '$3 ~ /^\// { print $3 } $1 ~ /^\// && NF > 1 { print $1 }' | sort -u); do
  [[ -e "$WORK/root$lib" || -L "$WORK/root$lib" ]] && continue
  cp -L --parents "$lib" "$WORK/root/" || fail "cannot copy $lib into the root"
done

cat >"$WORK/root/init" <<'GUEST'
#!/bin/bash
# The guest's init: the checks, then power off.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root OMP_NUM_THREADS=2
mount -t proc proc /proc && mount -t sysfs sys /sys && mount -t devtmpfs dev /dev && mount -t tmpfs tmp /tmp
exec >/dev/ttyS0 2>&1
echo "guest: kernel $(uname -r), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
echo "guest: accel $(dmesg | grep -q 'Hypervisor detected: KVM' && echo kvm || echo tcg)"
cd /opt/tz
echo "=== doctor"
./tierzero doctor | grep '^numa'
./tierzero doctor --json > /tmp/doctor.json
echo "=== core_numa_test"
./core_numa_test --gtest_brief=1 2>&1 | tail -n 4
echo "core_numa_test exit $?"
args=(train --model tiny --steps 6 --dtype bf16 --lr 1e-3 --log-every 1 --val-batches 1)
echo "=== train, optimizer on the host tier"
./tierzero "${args[@]}" --zero-stage 2 --offload-optimizer cpu > /tmp/cpu.log 2>&1
echo "host-tier run: exit $?"
grep -E "^step" /tmp/cpu.log
echo "=== train, optimizer on numa:1"
./tierzero "${args[@]}" --zero-stage 2 --offload-optimizer numa:1 --numa-mem 1=64M > /tmp/numa.log 2>&1
echo "numa:1 run: exit $?"
grep -E "numa:1|^step|does not fit|error" /tmp/numa.log
# step, loss and norm of each step line (its times differ)
grep -E '^step +[0-9]+/' /tmp/cpu.log | awk -F'|' '{ print $1 $2 $4 }' > /tmp/cpu.losses
grep -E '^step +[0-9]+/' /tmp/numa.log | awk -F'|' '{ print $1 $2 $4 }' > /tmp/numa.losses
grep 'val loss' /tmp/cpu.log > /tmp/cpu.val && grep 'val loss' /tmp/numa.log > /tmp/numa.val &&
  cmp -s /tmp/cpu.val /tmp/numa.val || echo 'validation: DIFFERS'
if [ -s /tmp/cpu.losses ] && cmp -s /tmp/cpu.losses /tmp/numa.losses; then
  echo "losses: numa:1 equals the host tier, $(wc -l < /tmp/cpu.losses) steps"
else
  echo "losses: DIFFER"; paste /tmp/cpu.losses /tmp/numa.losses
fi
# Two nodes in one run, and the ratio flags: each against the same run on the host tier.
pair() {  # pair NAME HOST-FLAGS -- NUMA-FLAGS: "NAME: equal, N steps" or "NAME: DIFFER"
  local name=$1 host=() numa=()
  shift
  while [ "$1" != -- ]; do host+=("$1"); shift; done
  shift
  numa=("$@")
  ./tierzero "${args[@]}" "${host[@]}" > /tmp/h.log 2>&1 || { echo "$name: the host run failed"; tail -3 /tmp/h.log; return; }
  ./tierzero "${args[@]}" "${numa[@]}" > /tmp/n.log 2>&1 || { echo "$name: the numa run failed"; tail -3 /tmp/n.log; return; }
  grep "pages checked on node" /tmp/n.log
  grep -E '^step +[0-9]+/|val loss' /tmp/h.log | awk -F'|' '{ print $1 $2 $4 }' > /tmp/h.losses
  grep -E '^step +[0-9]+/|val loss' /tmp/n.log | awk -F'|' '{ print $1 $2 $4 }' > /tmp/n.losses
  if [ -s /tmp/h.losses ] && cmp -s /tmp/h.losses /tmp/n.losses; then
    echo "$name: equal, $(wc -l < /tmp/h.losses) lines"
  else
    echo "$name: DIFFER"; paste /tmp/h.losses /tmp/n.losses
  fi
}
echo "=== stage 3: optimizer on numa:1, parameters on numa:0"
pair "two nodes" --zero-stage 3 --param-persistence-threshold 0 --offload-optimizer cpu --offload-param cpu -- \
  --zero-stage 3 --param-persistence-threshold 0 --offload-optimizer numa:1 --offload-param numa:0 --numa-mem 0=64M,1=64M
echo "=== half the optimizer states on numa:1"
pair "ratio 0.5" --zero-stage 2 --offload-optimizer cpu --offload-ratio 0.5 -- \
  --zero-stage 2 --offload-optimizer numa:1 --offload-ratio 0.5
echo "=== bench numa"
./tierzero bench numa --bytes 64M --adam-elements 2097152 --reps 3
echo "bench numa exit $?"
echo "=== guest done"
echo o > /proc/sysrq-trigger
sleep 30
GUEST
chmod +x "$WORK/root/init"
(cd "$WORK/root" && find . -print0 | cpio --null -o -H newc --quiet) >"$WORK/root.cpio" || fail "cannot pack the root"
log "the root: $(du -m "$WORK/root.cpio" | cut -f1) MiB (uncompressed cpio, the initramfs)"

# Software emulation by default: on this project's machines /dev/kvm is a nested KVM that refuses
# -cpu max (qemu asserts setting MSR 0x10a) and, with -cpu host,-arch-capabilities, boots no kernel within
# minutes (seen 2026-12-04). TZ_QEMU_ACCEL=kvm tries it.
accel="-accel tcg -cpu max"
[[ "${TZ_QEMU_ACCEL:-tcg}" == kvm ]] && accel="-accel kvm -cpu host,-arch-capabilities"
# Node 0: both CPUs and 2 GiB (the initramfs unpacks there); node 1: 1 GiB and no CPU.
log "qemu-system-x86_64 ($accel): $KERNEL, 2 CPUs, node 0 2 GiB with both, node 1 1 GiB memory only"
t0=$(date +%s)
timeout 1500 qemu-system-x86_64 $accel -smp 2 -m 3G -nographic -no-reboot \
  -object memory-backend-ram,id=m0,size=2G -object memory-backend-ram,id=m1,size=1G \
  -numa node,nodeid=0,cpus=0-1,memdev=m0 -numa node,nodeid=1,memdev=m1 \
  -kernel "$KERNEL" -initrd "$WORK/root.cpio" \
  -append "console=ttyS0 rdinit=/init panic=-1 quiet loglevel=3" </dev/null >"$WORK/console.log" 2>&1 &
qemu_pid=$!
wait "$qemu_pid"
rc=$?
qemu_pid=""
secs=$(($(date +%s) - t0))
if grep -q '^guest:' "$WORK/console.log"; then
  tr -d '\r' <"$WORK/console.log" | grep -v '^\s*$' | sed -n '/^guest:/,$p'
else
  tr -d '\r' <"$WORK/console.log" | tail -n 30
fi
log "qemu exited $rc after $secs s"
out=$(tr -d '\r' <"$WORK/console.log")
grep -q "=== guest done" <<<"$out" || fail "the guest did not finish (qemu exit $rc after $secs s); its console is above"
grep -Eq "^numa: +node 1: .*cpus none \(memory only\)" <<<"$out" || fail "doctor does not list node 1 as memory only"
grep -q "core_numa_test exit 0" <<<"$out" || fail "core_numa_test failed in the guest"
grep -Eq "numa:1: .* ([0-9]+) of \1 pages checked on node 1 \(move_pages\)" <<<"$out" ||
  fail "the kernel does not find every page checked on node 1"
grep -q "bench numa exit 0" <<<"$out" || fail "bench numa failed in the guest"
grep -q "two nodes: equal, 7 lines" <<<"$out" || fail "optimizer on numa:1 and parameters on numa:0 differ from the host tier"
grep -Eq "numa:0: .* ([0-9]+) of \1 pages checked on node 0" <<<"$out" || fail "stage 3's parameters are not all on node 0"
grep -q "ratio 0.5: equal, 7 lines" <<<"$out" || fail "--offload-ratio 0.5 on numa:1 differs from the host tier's"
grep -q "losses: numa:1 equals the host tier, 6 steps" <<<"$out" && ! grep -q "validation: DIFFERS" <<<"$out" ||
  fail "the losses differ"
echo "PASS: numa:1 (memory-only node, $(grep -o 'accel [a-z]*' <<<"$out" | head -n 1)) trains bit for bit as the host tier, its pages on node 1, also with numa:0 in the same run and at --offload-ratio 0.5; the guest ran $secs s"
