#!/usr/bin/env python3
"""The GPU check's reports (run.sh calls it; python3's standard library only): each stage's record, the
figures the stages print, and the three files that come back from a lent machine, each rewritten
atomically: smoke.json, results.json (schema tierzero-gpu-check/3) and logs.tar.gz (at most 15 MiB)."""
import argparse
import glob
import io
import json
import math
import os
import socket
import sys
import tarfile
import time
import xml.etree.ElementTree as ET

SCHEMA = "tierzero-gpu-check/3"
SMOKE_SCHEMA = "tierzero-gpu-check-smoke/1"
SMOKE_STAGES = ["doctor", "smoke_cpu", "smoke_cuda", "smoke_kernel"]
LOGS_MAX_BYTES = 15 * 1024 * 1024


def write_atomic(path, data):
    """Writes bytes or text to PATH through a temporary file in the same folder and a rename."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_json(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def last_json_line(path):
    """The whole of PATH when it is one JSON object (tierzero doctor --json prints it over many lines), else
    its last line that parses as one (None when none does)."""
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    try:
        whole = json.loads(text)
        if isinstance(whole, dict):
            return whole
    except ValueError:
        pass
    lines = text.splitlines()
    for line in reversed(lines):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    return None


def tail(path, lines=15):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()[-lines:]
    except OSError:
        return []


# ---- stage records and figures --------------------------------------------------------------------

def cmd_stage(a):
    rec = {"name": a.name, "status": a.status, "rc": int(a.rc) if a.rc not in ("", None) else None,
           "seconds": float(a.seconds), "timeout_s": int(float(a.limit)), "needs_gpu": a.needs_gpu == "1",
           "reason": a.reason, "command": a.command, "n": a.n}
    if a.status in ("failed", "timeout", "stopped"):
        logs = os.path.join(a.work, "logs", a.name)
        text = "\n".join(tail(logs + ".out") + tail(logs + ".err"))
        if text:
            rec["log_tail"] = text[-3000:]
    write_atomic(os.path.join(a.work, "stages", "%03d-%s.json" % (a.n, a.name)), json.dumps(rec))


def cmd_keep_json(a):
    value = last_json_line(os.path.join(a.work, "logs", a.stage + ".out"))
    if value is None:
        return 1
    write_atomic(os.path.join(a.work, "figures", a.key + ".json"), json.dumps(value))
    return 0


def cmd_note(a):
    """What a training stage was given and how long it took, joined to its figure at assembly."""
    os.makedirs(os.path.join(a.work, "notes"), exist_ok=True)
    write_atomic(os.path.join(a.work, "notes", a.key + ".json"),
                 json.dumps({"extra_flags": [f for f in a.flags if f], "wall_s": float(a.wall), "steps": a.steps}))


def cmd_gpus(a):
    d = read_json(a.doctor, {}) or {}
    gpu = d.get("gpu") or {}
    n = len(gpu.get("devices") or [])
    print(n, (gpu.get("problem") or "").replace("\n", " "))


def cmd_plan_budget(a):
    """A device budget halfway between the plan with parameters offloaded and the plan without: one JSON line."""
    try:
        with_p = json.load(open(a.with_))["ranks"][0]["bytes"]["device"]
        without = json.load(open(a.without))["ranks"][0]["bytes"]["device"]
    except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
        print("plan-budget: no device bytes in tierzero plan's JSON: %s" % e, file=sys.stderr)
        return 1
    print(json.dumps({"device_bytes_with_param_offload": with_p, "device_bytes_without": without,
                      "device_mem_mib": int((with_p + without) / 2 / 1048576)}))
    return 0


def cmd_field(a):
    value = dig(read_json(os.path.join(a.work, "figures", a.key + ".json")), a.field)
    if value is None:
        return 1
    print(value)
    return 0


def cmd_tokens(a):
    """A seeded llm.c token file (standard library only): uint16 (20240520, version 1) for vocabularies up to
    65,536, else uint32 (20240801, version 7), tokens uniform over the vocabulary."""
    import array
    import random
    rng = random.Random(a.seed)
    wide = a.vocab > 65536
    head = array.array("i", [0] * 256)
    head[0], head[1], head[2] = (20240801, 7, a.count) if wide else (20240520, 1, a.count)
    toks = array.array("I" if wide else "H", (rng.randrange(a.vocab) for _ in range(a.count)))
    if sys.byteorder != "little":
        head.byteswap()
        toks.byteswap()
    write_atomic(a.out, head.tobytes() + toks.tobytes())
    return 0


def cmd_keep_profile(a):
    """The metrics file's "profile" record (tierzero train --profile-ops) as figure KEY."""
    prof = None
    try:
        with open(a.metrics) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{") and '"profile"' in line:
                    prof = json.loads(line).get("profile")
    except (OSError, ValueError) as e:
        print("keep-profile: %s: %s" % (a.metrics, e), file=sys.stderr)
        return 1
    if prof is None:
        print("keep-profile: %s has no profile record" % a.metrics, file=sys.stderr)
        return 1
    write_atomic(os.path.join(a.work, "figures", a.key + ".json"), json.dumps(prof))
    return 0


def losses_of(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            rec = json.loads(line)
            if "loss" in rec and "step" in rec:
                out.append(float(rec["loss"]))
    return out


def cmd_compare_losses(a):
    """Exit 0 when every step's loss of RUN is within RTOL of REFERENCE's (relative), else 1."""
    try:
        ref, run = losses_of(a.reference), losses_of(a.run)
    except (OSError, ValueError) as e:
        print("compare-losses: cannot read the metrics: %s" % e, file=sys.stderr)
        return 1
    diffs = [abs(x - y) / abs(y) if y else abs(x) for x, y in zip(run, ref)]
    worst = max(diffs) if diffs else None
    ok = len(ref) > 0 and len(run) == len(ref) and all(math.isfinite(x) for x in run) and worst <= a.rtol
    print(json.dumps({"reference_losses": ref, "losses": run, "max_relative_difference": worst,
                      "rtol": a.rtol, "pass": ok}))
    if not ok:
        if len(run) != len(ref):
            why = "%d losses against the reference's %d" % (len(run), len(ref))
        else:
            step = diffs.index(worst) + 1 if diffs else 0
            why = "step %d: loss %r against the cpu's %r (relative difference %.3g > %g)" % (
                step, run[step - 1] if run else None, ref[step - 1] if ref else None, worst or 0, a.rtol)
        print("compare-losses: the cuda run's losses differ from the cpu's: " + why, file=sys.stderr)
    return 0 if ok else 1


# ---- the GoogleTest reports -----------------------------------------------------------------------

def test_summary(xml_dir):
    passed, failed, skipped, files = 0, [], [], 0
    for path in sorted(glob.glob(os.path.join(xml_dir, "*.xml"))):
        exe = os.path.basename(path)[:-4]
        try:
            root = ET.parse(path).getroot()
        except (OSError, ET.ParseError) as e:
            failed.append("%s (its report cannot be read: %s)" % (exe, e))
            continue
        files += 1
        for c in root.iter("testcase"):
            name = "%s: %s.%s" % (exe, c.get("classname", "?"), c.get("name", "?"))
            if c.find("failure") is not None or c.find("error") is not None:
                failed.append(name)
            elif c.get("result") == "skipped" or c.find("skipped") is not None or c.get("status") == "notrun":
                skipped.append(name)
            else:
                passed += 1
    if files == 0 and not failed:
        return None
    return {"executables": files, "total": passed + len(failed) + len(skipped), "passed": passed,
            "failed": len(failed), "skipped": len(skipped), "failed_names": failed, "skipped_names": skipped[:50]}


# ---- assembly -------------------------------------------------------------------------------------

def libraries(work):
    out = {}
    try:
        lines = open(os.path.join(work, "libraries.tsv")).read().splitlines()
    except OSError:
        return out
    for line in lines:
        parts = (line.split("\t") + ["", "", "", ""])[:4]
        kind, version, path, source = parts
        if not kind:
            continue
        if path:
            out[kind] = {"path": path, "version": version, "source": source}
        else:
            out[kind] = {"path": None, "version": None, "source": None, "note": source}
    return out


def goal(name, measure, value, cmp, target, stage, stages):
    g = {"goal": name, "measure": measure, "value": value, "comparison": cmp, "target": target,
         "pass": None if value is None else (value >= target if cmp == ">=" else value <= target)}
    if value is None:
        s = stages.get(stage)
        if s is None:
            g["reason"] = "not measured: stage %s did not run" % stage
        else:
            g["reason"] = "not measured: %s %s%s" % (stage, s["status"], ": " + s["reason"] if s.get("reason") else "")
    return g


def dig(d, *keys):
    for k in keys:
        if isinstance(d, dict):
            d = d.get(k)
        elif isinstance(d, list) and isinstance(k, int) and -len(d) <= k < len(d):
            d = d[k]
        else:
            return None
    return d


def ratio(a, b):
    return a / b if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b > 0 else None


def smoke_report(stages, libs, gpus, work):
    present = {n: stages[n] for n in SMOKE_STAGES if n in stages}
    bad = [n for n in SMOKE_STAGES if n in present and present[n]["status"] in ("failed", "timeout", "stopped")]
    if bad:
        verdict = "failed"
    elif len(present) < len(SMOKE_STAGES):
        verdict = "incomplete"
    elif gpus == 0:
        verdict = "no GPU"
    elif all(present[n]["status"] == "ok" for n in SMOKE_STAGES):
        verdict = "ok"
    else:
        verdict = "partial"
    first = present[bad[0]] if bad else None
    return {"schema": SMOKE_SCHEMA, "verdict": verdict, "gpus": gpus,
            "first_error": None if first is None else {"stage": first["name"], "reason": first.get("reason"),
                                                       "log_tail": first.get("log_tail")},
            "loss_comparison": last_json_line(os.path.join(work, "logs", "smoke_cuda.out")),
            "libraries": libs, "stages": present}


def write_logs(work, results_dir):
    """logs.tar.gz: every log, report and stage record; each file cut to its last part when the archive
    would pass 15 MiB."""
    files = []
    for sub in ("logs", "xml", "stages", "figures", "notes"):
        files += sorted(glob.glob(os.path.join(work, sub, "*")))
    files = [f for f in files if os.path.isfile(f)]
    cap = 8 * 1024 * 1024
    while True:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            for f in files:
                with open(f, "rb") as fh:
                    fh.seek(0, os.SEEK_END)
                    size = fh.tell()
                    fh.seek(max(0, size - cap))
                    data = fh.read()
                info = tarfile.TarInfo(os.path.join("gpu-check-logs", os.path.relpath(f, work)))
                info.size, info.mtime = len(data), int(time.time())
                tar.addfile(info, io.BytesIO(data))
        if buf.tell() <= LOGS_MAX_BYTES or cap < 4096:
            break
        cap //= 4
    write_atomic(os.path.join(results_dir, "logs.tar.gz"), buf.getvalue())


# bf16 runs of one model from the same weights and tokens: both round every product's inputs to bf16 and
# accumulate in fp32; tierzero also stores activations in bf16 where autocast keeps the residual stream and
# the norms' outputs in fp32, so each step's loss may differ by that rounding, carried through a few steps.
LOSS_RTOL = 0.02


def peer_table(figures, work):
    """One row per run: ms per step, tokens/s, MFU, and for a peer its losses against tierzero's run of the
    same model (from the same weights and tokens) step by step."""
    def tz_losses(key):
        try:
            return losses_of(os.path.join(work, "logs", key + ".jsonl"))
        except (OSError, ValueError):
            return None

    rows = []
    for label, key, ref in (("tierzero gpt2-xl", "step_no_offload", None), ("torch eager", "torch_eager", "step_no_offload"),
                            ("torch.compile", "torch_compiled", "step_no_offload"), ("tierzero llama3.2-1b", "step_llama", None),
                            ("hf llama", "hf_llama", "step_llama")):
        f = figures.get(key) or {}
        row = {"run": label, "stage": key, "ms_per_step": f.get("ms_per_step"), "tokens_per_s": f.get("tokens_per_s"),
               "mfu": f.get("mfu")}
        if key in ("torch_compiled",):
            row["compile_s"] = f.get("compile_s")
        if ref:
            mine, theirs = tz_losses(ref), f.get("losses")
            if mine and theirs and (f.get("init_from") or f.get("folder")):
                n = min(len(mine), len(theirs))
                row["losses"], row["tierzero_losses"] = theirs[:n], mine[:n]
                row["max_loss_rel_diff"] = max(abs(x - y) / abs(y) for x, y in zip(theirs[:n], mine[:n]))
            row["step_time_ratio"] = ratio(dig(figures, ref, "ms_per_step"), f.get("ms_per_step"))
        rows.append(row)
    return rows


def cmd_assemble(a):
    stages, order = {}, []
    for path in sorted(glob.glob(os.path.join(a.work, "stages", "*.json"))):
        rec = read_json(path)
        if rec:
            stages[rec["name"]] = {k: v for k, v in rec.items() if k not in ("name", "n")}
            stages[rec["name"]]["name"] = rec["name"]
            order.append(rec["name"])
    figures = {}
    for path in sorted(glob.glob(os.path.join(a.work, "figures", "*.json"))):
        figures[os.path.basename(path)[:-5]] = read_json(path)
    for path in sorted(glob.glob(os.path.join(a.work, "notes", "*.json"))):
        key, note = os.path.basename(path)[:-5], read_json(path) or {}
        fig = figures.get(key)
        if isinstance(fig, dict):
            fig.update(extra_flags=note.get("extra_flags", []), wall_s=note.get("wall_s"))
            if isinstance(fig.get("ms_per_step"), (int, float)):
                fig["outside_steps_s"] = note.get("wall_s", 0) - note.get("steps", 0) * fig["ms_per_step"] / 1000
    machine = figures.pop("doctor", None)
    gpus = a.gpus
    libs = libraries(a.work)
    manifest = read_json(os.path.join(a.bundle, "manifest.json"), {}) or {}

    t0 = dig(figures, "step_no_offload", "ms_per_step")
    t1 = dig(figures, "step_optimizer_cpu_noclip", "ms_per_step")
    t3 = dig(figures, "step_param_offload", "ms_per_step")
    te, tc = dig(figures, "torch_eager", "ms_per_step"), dig(figures, "torch_compiled", "ms_per_step")
    tl, th = dig(figures, "step_llama", "ms_per_step"), dig(figures, "hf_llama", "ms_per_step")
    peers = peer_table(figures, a.work)
    att = [dig(figures, "gpu_attention", "rows", i) or {} for i in (0, 1)]
    goals = [
        goal("gpt2-xl bf16 without offload >= 50% MFU", "step_no_offload.mfu",
             dig(figures, "step_no_offload", "mfu"), ">=", 0.50,
             "step_no_offload_mfu" if "step_no_offload_mfu" in stages else "step_no_offload", stages),
        goal("gpt2-xl step <= 0.83x PyTorch eager's (1.2x its tokens/s)",
             "step_no_offload.ms_per_step / torch_eager.ms_per_step", ratio(t0, te), "<=", 0.83,
             "torch_eager" if te is None else "step_no_offload", stages),
        goal("gpt2-xl step no slower than torch.compile's", "step_no_offload.ms_per_step / torch_compiled.ms_per_step",
             ratio(t0, tc), "<=", 1.0, "torch_compiled" if tc is None else "step_no_offload", stages),
        goal("llama3.2-1b step <= 0.83x the Hugging Face peer's", "step_llama.ms_per_step / hf_llama.ms_per_step",
             ratio(tl, th), "<=", 0.83, "hf_llama" if th is None else "step_llama", stages),
    ]
    for i, shape in enumerate(("gpt2-xl B=8 T=1024 hs=64", "B=4 T=2048 hs=128")):
        goals.append(goal("attention forward >= 50%% of the bf16 dense peak (%s)" % shape,
                          "gpu_attention.rows[%d].forward_fraction_of_peak" % i, att[i].get("forward_fraction_of_peak"),
                          ">=", 0.50, "gpu_attention", stages))
        goals.append(goal("attention backward >= 40%% of the bf16 dense peak (%s)" % shape,
                          "gpu_attention.rows[%d].backward_fraction_of_peak" % i, att[i].get("backward_fraction_of_peak"),
                          ">=", 0.40, "gpu_attention", stages))
    goals += [
        goal("optimizer-on-CPU step <= 1.15x the step without offload (no clipping, as fine-tuning)",
             "step_optimizer_cpu_noclip.ms_per_step / step_no_offload.ms_per_step", ratio(t1, t0), "<=", 1.15,
             "step_optimizer_cpu_noclip" if t1 is None else "step_no_offload", stages),
        goal("parameters and optimizer on the CPU <= 1.5x the optimizer-on-CPU step",
             "step_param_offload.ms_per_step / step_optimizer_cpu_noclip.ms_per_step", ratio(t3, t1), "<=", 1.5,
             "step_param_offload" if t3 is None else "step_optimizer_cpu_noclip", stages),
        goal("losses agree with PyTorch eager's from the same weights and tokens", "peers[torch eager].max_loss_rel_diff",
             dig(peers, 1, "max_loss_rel_diff"), "<=", LOSS_RTOL, "torch_eager", stages),
        goal("losses agree with the Hugging Face Llama's from the same weights and tokens",
             "peers[hf llama].max_loss_rel_diff", dig(peers, 4, "max_loss_rel_diff"), "<=", LOSS_RTOL, "hf_llama", stages),
        goal("matmul >= 70% of the bf16 dense peak", "gpu_matmul.square_fraction_of_peak (8192^3, bf16 in, fp32 accumulate)",
             dig(figures, "gpu_matmul", "square_fraction_of_peak"), ">=", 0.70, "gpu_matmul", stages),
        goal("pinned copies >= 80% of the link", "gpu_copy.pinned_min_fraction_of_link (the slower of h2d and d2h)",
             dig(figures, "gpu_copy", "pinned_min_fraction_of_link"), ">=", 0.80, "gpu_copy", stages),
    ]
    peer = {"tierzero_ms_per_step": t0, "torch_eager_ms_per_step": te, "torch_compiled_ms_per_step": tc,
            "step_time_vs_torch_eager": ratio(t0, te), "step_time_vs_torch_compiled": ratio(t0, tc),
            "mfu_vs_torch_eager": ratio(dig(figures, "step_no_offload", "mfu"), dig(figures, "torch_eager", "mfu")),
            "mfu_vs_torch_compiled": ratio(dig(figures, "step_no_offload", "mfu"),
                                           dig(figures, "torch_compiled", "mfu")),
            "llama_step_time_vs_hf": ratio(tl, th), "table": peers}
    results = {
        "schema": SCHEMA, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": socket.gethostname(),
        "complete": a.final, "bundle": {k: manifest.get(k) for k in ("commit", "uncommitted_changes", "built",
                                                                     "build_type", "cuda_architectures", "linked")},
        "test_mode": a.fake or False, "budget_s": a.budget, "elapsed_s": a.elapsed, "gpus": gpus,
        "no_gpu_reason": a.no_gpu if gpus == 0 else None,
        "libraries": libs, "machine": machine,
        "training_runs": {"model": "gpt2-xl", "dtype": "bf16", "seq_len": 1024, "micro_batch": a.micro_batch,
                          "grad_accum": a.grad_accum, "steps": a.steps, "steps_not_measured": a.skip},
        "goals": goals, "peer": peer, "tests": test_summary(os.path.join(a.work, "xml")),
        "profiles": {k: figures.get(k) for k in ("profile_gpt2", "profile_llama") if figures.get(k)},
        "figures": figures, "stage_order": order, "stages": stages,
    }
    os.makedirs(a.results, exist_ok=True)
    write_atomic(os.path.join(a.results, "results.json"), json.dumps(results, indent=1) + "\n")
    write_atomic(os.path.join(a.results, "smoke.json"),
                 json.dumps(smoke_report(stages, libs, gpus, a.work), indent=1) + "\n")
    write_logs(a.work, a.results)
    return 0


def cmd_summary(a):
    r = read_json(a.results)
    if not r:
        print("run.sh: no results in %s" % a.results)
        return 1
    print("run.sh: wrote %s (%s s of a %s s budget, %d GPU(s))" % (a.results, r["elapsed_s"], r["budget_s"], r["gpus"]))
    for g in r["goals"]:
        mark = {True: "PASS", False: "FAIL", None: "n/a "}[g["pass"]]
        print("  %s  %s: %s" % (mark, g["goal"], round(g["value"], 3) if g["value"] is not None else g["reason"]))
    table = dig(r, "peer", "table") or []
    if any(row.get("ms_per_step") for row in table):
        print("  %-22s %10s %12s %7s %10s" % ("run", "ms/step", "tokens/s", "MFU", "loss diff"))
        for row in table:
            fmt = lambda v, f: f % v if isinstance(v, (int, float)) else "-"
            print("  %-22s %10s %12s %7s %10s" % (row["run"], fmt(row.get("ms_per_step"), "%.1f"),
                                                   fmt(row.get("tokens_per_s"), "%.0f"),
                                                   fmt(100 * row["mfu"] if row.get("mfu") else None, "%.1f%%"),
                                                   fmt(row.get("max_loss_rel_diff"), "%.4f")))
    t = r.get("tests")
    print("  tests: not run" if not t else "  tests: %d passed, %d failed, %d skipped of %d" % (
        t["passed"], t["failed"], t["skipped"], t["total"]))
    groups = {}  # stages that did not pass, by how they ended: one line each
    for name in r["stage_order"]:
        s = r["stages"][name]
        if s["status"] != "ok":
            groups.setdefault((s["status"], s.get("reason") or ""), []).append(name)
    for (status, reason), names in groups.items():
        print("  %s (%s)%s" % (status, ", ".join(names), ": " + reason if reason else ""))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("stage")
    for k in ("work", "name", "status", "seconds", "limit", "needs-gpu", "reason", "command"):
        s.add_argument("--" + k, required=True)
    s.add_argument("--n", type=int, required=True)
    s.add_argument("--rc", default="")
    s = sub.add_parser("keep-json")
    for k in ("work", "stage", "key"):
        s.add_argument("--" + k, required=True)
    s = sub.add_parser("note")
    s.add_argument("--work", required=True)
    s.add_argument("--key", required=True)
    s.add_argument("--wall", required=True)
    s.add_argument("--steps", type=int, required=True)
    s.add_argument("flags", nargs="*")
    s = sub.add_parser("gpus")
    s.add_argument("--doctor", required=True)
    s = sub.add_parser("field")
    for k in ("work", "key", "field"):
        s.add_argument("--" + k, required=True)
    s = sub.add_parser("plan-budget")
    s.add_argument("--with", dest="with_", required=True)
    s.add_argument("--without", required=True)
    s = sub.add_parser("compare-losses")
    s.add_argument("--reference", required=True)
    s.add_argument("--run", required=True)
    s.add_argument("--rtol", type=float, required=True)
    s = sub.add_parser("tokens")
    s.add_argument("--out", required=True)
    s.add_argument("--vocab", type=int, required=True)
    s.add_argument("--count", type=int, required=True)
    s.add_argument("--seed", type=int, required=True)
    s = sub.add_parser("keep-profile")
    for k in ("work", "key", "metrics"):
        s.add_argument("--" + k, required=True)
    s = sub.add_parser("assemble")
    for k in ("work", "results", "bundle"):
        s.add_argument("--" + k, required=True)
    for k in ("budget", "elapsed", "micro-batch", "grad-accum", "steps", "skip"):
        s.add_argument("--" + k, type=int, required=True)
    s.add_argument("--fake", default="")
    s.add_argument("--gpus", type=int, required=True)
    s.add_argument("--no-gpu", default="")
    s.add_argument("--final", action="store_true")
    s = sub.add_parser("summary")
    s.add_argument("--results", required=True)
    a = p.parse_args()
    fn = {"stage": cmd_stage, "keep-json": cmd_keep_json, "note": cmd_note, "gpus": cmd_gpus,
          "plan-budget": cmd_plan_budget, "field": cmd_field, "compare-losses": cmd_compare_losses, "assemble": cmd_assemble,
          "tokens": cmd_tokens, "keep-profile": cmd_keep_profile,
          "summary": cmd_summary}[a.cmd]
    sys.exit(fn(a) or 0)


if __name__ == "__main__":
    main()
