#!/usr/bin/env bash
# No nan or inf reaches a user (issue 37): `tierzero plan` over hardware files with each rate set to 0 in
# turn, all of them 0, rates of 1e-300, and a CPU node's, at 1 and 16 ranks, with the optimizer and
# parameters on each tier, as text, --json, --compare (text, --json and --csv): each run either refuses
# the file (exit 1 naming the hardware field whose rate makes a term unbounded) or prints only finite
# figures (every number in the text, every JSON number, every CSV field), never "nan", "inf" or null.
# usage: plan_finite.sh TIERZERO
set -u
tierzero=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
/usr/bin/python3 - "$d" <<'PY'
import json, sys
d = sys.argv[1]
base = {"name": "base", "device": "cuda", "ranks_per_node": 8, "device_bytes": 80e9, "host_bytes": 2e12,
        "nvme_bytes": 3e13, "step_tflops": {"fp32": 40, "bf16": 400, "fp16": 400},
        "peak_tflops": {"fp32": 60, "bf16": 990, "fp16": 990}, "device_gbs": 3000, "cpu_adam_gbs": 100,
        "link_gbs": 50, "nvme_read_gbs": 20, "nvme_write_gbs": 10, "intra_gbs": 300, "inter_gbs": 40,
        "latency_us": 20, "numa": [{"node": 0, "read_gbs": 50, "write_gbs": 50}]}
rates = ["device_gbs", "cpu_adam_gbs", "link_gbs", "nvme_read_gbs", "nvme_write_gbs", "intra_gbs", "inter_gbs",
         "latency_us"]
files = {"base": base}
for r in rates:
    files["zero-" + r] = dict(base, name="zero-" + r, **{r: 0})
for k in ["step_tflops", "peak_tflops"]:
    files["zero-" + k] = dict(base, name="zero-" + k, **{k: {"fp32": 0, "bf16": 0, "fp16": 0}})
files["all-zero"] = dict(base, name="all-zero", **{r: 0 for r in rates},
                         step_tflops={"fp32": 0, "bf16": 0, "fp16": 0}, peak_tflops={"fp32": 0, "bf16": 0, "fp16": 0})
files["tiny"] = dict(base, name="tiny", **{r: 1e-300 for r in rates if r != "latency_us"},
                     step_tflops={"fp32": 1e-300, "bf16": 1e-300, "fp16": 1e-300})
files["cpu-zero"] = dict(base, name="cpu-zero", device="cpu", cores=8, **{r: 0 for r in rates})
for name, hw in files.items():
    json.dump(hw, open(f"{d}/{name}.json", "w"))
PY
options=("" "--offload-optimizer cpu" "--offload-optimizer numa:0" "--offload-optimizer nvme --nvme-path $d"
         "--zero-stage 3 --offload-param cpu --offload-optimizer cpu"
         "--zero-stage 3 --offload-param nvme --offload-optimizer nvme --nvme-path $d")
n=0 refused=0
: > "$d/checks.txt"
for hw in "$d"/*.json; do
  for world in 1 16; do
    runs=()
    for o in "${options[@]}"; do runs+=("--dtype bf16 $o" "--dtype bf16 --json $o"); done
    runs+=("--compare" "--compare --json" "--compare --csv $d/out.csv")
    for r in "${runs[@]}"; do
      read -r -a extra <<< "$r"
      out="$d/run$n.out"
      rm -f "$d/out.csv"
      "$tierzero" plan --model gpt2 --world "$world" --hardware "$hw" "${extra[@]}" > "$out" 2>&1
      rc=$?
      csv=""
      [ -f "$d/out.csv" ] && { cp "$d/out.csv" "$d/run$n.csv"; csv="$d/run$n.csv"; }
      printf '%s\t%s\t%s\t%s\t%s\n' "$rc" "$(basename "$hw" .json)" "$world $r" "$out" "$csv" >> "$d/checks.txt"
      n=$((n + 1))
    done
  done
done
/usr/bin/python3 - "$d/checks.txt" <<'PY'
import csv, json, math, re, sys
bad = []
refused = 0
word = re.compile(r"(?i)(?<![a-z])-?(nan|inf|infinity)(?![a-z])")
def numbers(v):
    if isinstance(v, dict):
        for x in v.values(): yield from numbers(x)
    elif isinstance(v, list):
        for x in v: yield from numbers(x)
    else:
        yield v
for line in open(sys.argv[1]):
    rc, hw, run, out, csvf = line.rstrip("\n").split("\t")
    text = open(out).read()
    where = f"{hw} {run}"
    if "tierzero: error:" in text:
        error = next(l for l in text.splitlines() if "tierzero: error:" in l)
        field = hw.split("zero-", 1)[1] if hw.startswith("zero-") else None
        if rc != "1":
            bad.append(f"{where}: failed with exit {rc}")
        elif field and not re.search(r"(?<![-\w])" + field + r"(?!\w)", error):
            bad.append(f"{where}: refused without naming {field}: {error[:300]}")
        elif not re.search(r"hardware field '[a-z_.0-9]+'|hardware '[^']*' (gives [a-z_]+ 0|has no)", error):
            bad.append(f"{where}: refused without naming a field: {error[:300]}")
        refused += 1
        continue
    if rc not in ("0", "1"):
        bad.append(f"{where}: exit {rc}")
    for m in word.finditer(text):
        bad.append(f"{where}: prints '{m.group(0)}': ...{text[max(0, m.start() - 80):m.end() + 20]}...")
        break
    if "--json" in run:
        try:
            j = json.loads(text[text.index("{") if "--compare" not in run else text.index("["):],
                           parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
        except ValueError as e:
            bad.append(f"{where}: not finite JSON: {e}")
            continue
        for v in numbers(j):
            if v is None or (isinstance(v, float) and not math.isfinite(v)):
                bad.append(f"{where}: JSON holds {v}")
                break
    if csvf:
        for row in csv.reader(open(csvf)):
            for f in row:
                try:
                    x = float(f)
                except ValueError:
                    continue
                if not math.isfinite(x):
                    bad.append(f"{where}: CSV holds {f}")
for b in bad[:20]:
    print("plan_finite.sh: FAIL:", b)
runs = sum(1 for _ in open(sys.argv[1]))
print(f"plan_finite.sh: {runs} plan runs over {len(set(l.split(chr(9))[1] for l in open(sys.argv[1])))} hardware files: "
      f"{refused} refused naming the field, {runs - refused} printed only finite figures" if not bad else
      f"plan_finite.sh: {len(bad)} problems")
sys.exit(1 if bad else 0)
PY
