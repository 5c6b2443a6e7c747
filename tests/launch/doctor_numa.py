#!/usr/bin/env python3
"""`tierzero doctor --json`'s numa.nodes[] against the kernel's own account in /sys/devices/system/node:
the same node ids (those with memory), each node's CPU list, its MemTotal (exactly) and a MemFree within
5% of the total of a fresh reading, distances from each node's `distance` file for the nodes listed.
usage: doctor_numa.py TIERZERO; exits 77 where /sys has no NUMA nodes."""
import json
import os
import re
import subprocess
import sys

SYS = "/sys/devices/system/node"


def cpulist(text):
    out = []
    for part in text.strip().split(","):
        if part:
            a, _, b = part.partition("-")
            out += list(range(int(a), int(b or a) + 1))
    return out


def meminfo(node):
    kv = {}
    for line in open(f"{SYS}/node{node}/meminfo"):
        m = re.match(r"Node \d+ (\w+):\s+(\d+) kB", line)
        if m:
            kv[m.group(1)] = int(m.group(2)) * 1024
    return kv


def main():
    if not os.path.isdir(f"{SYS}/node0"):
        print("doctor_numa.py: no NUMA nodes in /sys (kernel without NUMA)")
        return 77
    d = json.loads(subprocess.run([sys.argv[1], "doctor", "--json"], capture_output=True, text=True).stdout)
    nodes = d["numa"]["nodes"]
    ids = sorted(int(n[4:]) for n in os.listdir(SYS) if re.fullmatch(r"node\d+", n) and meminfo(int(n[4:])).get("MemTotal", 0) > 0)
    bad = []
    if [n["id"] for n in nodes] != ids:
        bad.append(f"node ids {[n['id'] for n in nodes]} but /sys has {ids}")
    for i, n in enumerate(nodes):
        node = n["id"]
        info = meminfo(node)
        cpus = cpulist(open(f"{SYS}/node{node}/cpulist").read())
        dist_all = [int(x) for x in open(f"{SYS}/node{node}/distance").read().split()]
        dist = [dist_all[m["id"]] for m in nodes]
        checks = [("cpus", n["cpus"], cpus), ("mem_total_bytes", n["mem_total_bytes"], info["MemTotal"]),
                  ("distances", n["distances"], dist)]
        for name, got, want in checks:
            if got != want:
                bad.append(f"node {node} {name}: doctor {got}, /sys {want}")
        if abs(n["mem_free_bytes"] - info["MemFree"]) > 0.05 * info["MemTotal"]:
            bad.append(f"node {node} mem_free_bytes: doctor {n['mem_free_bytes']}, /sys {info['MemFree']}")
        print(f"node {node}: cpus {n['cpus']}, {n['mem_total_bytes']} bytes, distances {n['distances']}: as /sys says"
              if not bad else "")
    for b in bad:
        print("MISMATCH " + b)
    print(f"doctor_numa.py: {len(nodes)} nodes agree with /sys" if not bad else "doctor_numa.py: mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
