# Medians of bench-io-ab.sh runs: per build and setting, tierzero with checksums on and off against fio
# (its medians over the same build's rounds), and every run.
import glob, json, os, statistics, sys
out = sys.argv[1]
runs = {}
for f in sorted(glob.glob(os.path.join(out, "*-round*.txt"))):
    b = os.path.basename(f).rsplit("-round", 1)[0]
    for l in open(f):
        if l.startswith('{"round"'):
            runs.setdefault(b, []).append(json.loads(l))
med = statistics.median
print(f"{'build':>20} {'bs':>5} {'qd':>3} {'buf':>4} {'n':>2} {'sums':>4} | {'write tz':>8} {'fio':>6} {'ratio':>6} | {'read tz':>8} {'fio':>6} {'ratio':>6} | tz runs (write; read)")
for b, rs in runs.items():
    for bs, qd, buf in dict.fromkeys((r["bs"], r["qd"], r["buffer"]) for r in rs):
        s = [r for r in rs if r["bs"] == bs and r["qd"] == qd and r["buffer"] == buf]
        fw, fr = med(r["fio_write_gbps"] for r in s), med(r["fio_read_gbps"] for r in s)
        for cs in ("on", "off"):
            tw = [r["tierzero"][cs]["write_gbps"] for r in s]
            tr = [r["tierzero"][cs]["read_gbps"] for r in s]
            print(f"{b:>20} {bs:>5} {qd:>3} {buf:>4} {len(s):>2} {cs:>4} | {med(tw):8.2f} {fw:6.2f} {med(tw)/fw:6.2f} | {med(tr):8.2f} {fr:6.2f} {med(tr)/fr:6.2f} |"
                  f" {' '.join(f'{x:.2f}' for x in tw)}; {' '.join(f'{x:.2f}' for x in tr)}; wrong {sum(r['tierzero'][cs]['wrong'] for r in s)}")
        fws = ' '.join('%.2f' % r['fio_write_gbps'] for r in s)
        frs = ' '.join('%.2f' % r['fio_read_gbps'] for r in s)
        print(f"{'':>20} {'':>5} {'':>3} {'':>4} {'':>2} {'fio':>4} | write {fws}; read {frs}")
