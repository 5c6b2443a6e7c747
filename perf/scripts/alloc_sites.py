#!/usr/bin/env python3
# Names and sorts the call stacks libtz_alloc_trace.so recorded (perf/alloc_trace/alloc_trace.cc), one
# report per process (rank): each stack's frames through addr2line, its class, and the sums.
# Classes: "plan" (a stack through a device allocator's allocate, the memory plan's only door: the
# planned buffers), and outside the plan "communication temporaries" (Open MPI, UCX, hwloc or PMIx
# frames), "oneDNN scratch" (oneDNN frames), "data loader" (tierzero's token files and loaders),
# "libraries" (other libraries' frames only: the C++ runtime, OpenMP, the loader) and "tierzero" (the
# rest of tierzero's own code: what the plan does not hold and should, or says it cannot).
# Name a report's frames with the very binaries that wrote it: after a rebuild the offsets point elsewhere.
# usage: alloc_sites.py REPORT... [--top N]
# Prints per report a line "class CLASS MIB" for each class (for scripts), then the table; with a report
# that has each stack's bytes at the process's peak, "at_peak CLASS MIB" lines and the sites held at it.
import collections
import re
import subprocess
import sys

PLAN = re.compile(r"Allocator::allocate|Allocator13allocate")
COMM = re.compile(r"libmpi|libopen-pal|libopen-rte|mca_|libucx|libucp|libucs|libhwloc|libpmix|libfabric")
ONEDNN = re.compile(r"libdnnl")
DATA = re.compile(r"DataLoader|TokenFile|token_file|Corpus|corpus")


def symbolize(frames):
    """{(module, offset): function} for every frame, one addr2line per module."""
    by_module = collections.defaultdict(set)
    for m, off in frames:
        by_module[m].add(off)
    names = {}
    for m, offs in by_module.items():
        offs = sorted(offs)
        try:
            out = subprocess.run(["addr2line", "-f", "-C", "-e", m] + ["0x%x" % o for o in offs],
                                 capture_output=True, text=True, timeout=120).stdout.split("\n")
        except (OSError, subprocess.SubprocessError):
            out = []
        for i, off in enumerate(offs):
            fn = out[2 * i] if 2 * i < len(out) else "??"
            names[(m, off)] = fn if fn != "??" else "%s+0x%x" % (m.rsplit("/", 1)[-1], off)
    return names


def classify(stack):
    text = " ".join("%s %s" % (m, fn) for m, fn in stack)
    if PLAN.search(text):
        return "plan"
    if COMM.search(text):
        return "communication temporaries"
    if ONEDNN.search(text):
        return "oneDNN scratch"
    if DATA.search(text):
        return "data loader"
    if any("tierzero" in m.rsplit("/", 1)[-1] or "/build" in m for m, _ in stack):
        return "tierzero"
    return "libraries"


def main():
    args = sys.argv[1:]
    top = 12
    if "--top" in args:
        i = args.index("--top")
        top = int(args[i + 1])
        del args[i:i + 2]
    for path in args:
        header, sites = "", []
        for line in open(path):
            if line.startswith("#"):
                header = line.strip()
            elif line.startswith("site "):
                head, _, frames = line.partition("|")
                f = head.split()
                kv = dict(zip(f[2::2], f[3::2]))
                rec = {"kind": f[1], "peak": int(kv["peak"]), "total": int(kv["total"]), "count": int(kv["count"]),
                       "at_peak": int(kv.get("at_peak", -1))}
                rec["frames"] = []
                for tok in frames.split():
                    m, _, off = tok.rpartition("+0x")
                    if m and off:
                        rec["frames"].append((m, int(off, 16)))
                sites.append(rec)
        names = symbolize([fr for s in sites for fr in s["frames"]])
        sums, at_peak = collections.Counter(), collections.Counter()
        for s in sites:
            s["stack"] = [(m, names[(m, o)]) for m, o in s["frames"]]
            s["class"] = classify(s["stack"])
            sums[s["class"]] += s["peak"]
            at_peak[s["class"]] += max(s["at_peak"], 0)
            # The call site: the innermost frame of tierzero's own code, else the innermost frame.
            own = [fn for m, fn in s["stack"] if "tierzero" in m.rsplit("/", 1)[-1]]
            s["site"] = (own[0] if own else (s["stack"][0][1] if s["stack"] else "?"))[:110]
        print("%s: %s" % (path, header))
        print("  by class (the sum of each stack's own peak; stacks need not peak together):")
        for c, b in sums.most_common():
            print("    class %-28s %10.2f MiB" % (c, b / 2**20))
        if all(s["at_peak"] >= 0 for s in sites):
            print("  at the peak of everything tracked (what each class held when the process held most):")
            for c, b in at_peak.most_common():
                print("    at_peak %-26s %10.2f MiB" % (c, b / 2**20))
        print("  outside the plan, the %d largest call sites (peak MiB summed over their stacks, allocations, "
              "class, call site):" % top)
        by_site = collections.defaultdict(lambda: [0, 0])
        for s in sites:
            if s["class"] != "plan":
                by_site[(s["class"], s["site"])][0] += s["peak"]
                by_site[(s["class"], s["site"])][1] += s["count"]
        for (c, site), (peak, count) in sorted(by_site.items(), key=lambda kv: -kv[1][0])[:top]:
            print("    %8.2f %6d %-26s %s" % (peak / 2**20, count, c, site))
        if all(s["at_peak"] >= 0 for s in sites):
            held = collections.Counter()
            for s in sites:
                if s["class"] != "plan" and s["at_peak"] > 0:
                    held[(s["class"], s["site"])] += s["at_peak"]
            print("  outside the plan at the peak, the %d largest call sites (MiB, class, call site):" % top)
            for (c, site), b in held.most_common(top):
                print("    %8.2f %-26s %s" % (b / 2**20, c, site))

main()
