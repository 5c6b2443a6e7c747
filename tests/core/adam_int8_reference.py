# The reference of blockwise 8-bit AdamW (core/adam_int8.h) in numpy float32, written from the
# definitions, not from tierzero's code: the dynamic maps (quant_map_reference.exact_map), nearest-code
# quantization per block of 256 with ties to the smaller magnitude (a nonzero v never to the code of 0),
# torch.optim.AdamW's update with
# sqrt(v) times 1/sqrt(1 - beta2^t) (math::adamw_update), NaN/inf gradient elements skipped, and for a
# bf16 master the stochastic rounding keyed by (seed, step, element); and AdamW with bf16 moments
# ("moments": "bf16" in IN), each rounded to nearest even after its update.
# usage: adam_int8_reference.py IN.json OUT.json  (IN and OUT as tests/core/adam_int8_test.cc writes/reads them)
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from quant_map_reference import exact_map  # noqa: E402

f32 = np.float32
M64 = (1 << 64) - 1
SIGNED, UNSIGNED = exact_map(True), exact_map(False)


def fl(bits):
    return np.array(bits, dtype=np.uint32).view(np.float32)


def bits(a):
    return np.asarray(a, dtype=np.float32).view(np.uint32).tolist()


def nearest(m, x):
    if np.isnan(x):
        x = f32(0)
    hi = int(np.searchsorted(m, x, side="left"))
    if hi == 0:
        return 0
    if hi == 256:
        return 255
    lo = hi - 1
    dhi, dlo = f32(m[hi] - x), f32(x - m[lo])
    if dlo < dhi:
        return lo
    if dhi < dlo:
        return hi
    return lo if abs(m[lo]) <= abs(m[hi]) else hi


def quantize(x, m, keep_nonzero=False):
    absmax = f32(np.max(np.abs(x))) if len(x) else f32(0)
    zero = nearest(m, f32(0))
    codes = [nearest(m, f32(v / absmax)) if absmax > 0 else zero for v in x]
    if keep_nonzero:  # a nonzero value never takes the code of 0: its nearest nonzero neighbour instead
        codes = [(zero + 1 if v > 0 else zero - 1) if c == zero and v != 0 else c for c, v in zip(codes, x)]
    return absmax, codes


def counter_bits(seed, step, element):
    z = ((seed * 0x9E3779B97F4A7C15) & M64) ^ (((step + 0xD1B54A32D192ED03) & M64) * 0xBF58476D1CE4E5B9 & M64) ^ \
        (((element + 0x8CB92BA72F3D8DD7) & M64) * 0x94D049BB133111EB & M64)
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    z ^= z >> 31
    return z >> 32


def bf16_sr(x, r):
    u = int(np.array([x], dtype=np.float32).view(np.uint32)[0])
    assert (u & 0x7F800000) != 0x7F800000
    s = (u + (r & 0xFFFF)) & 0xFFFFFFFF
    if (s & 0x7F800000) == 0x7F800000:
        return u >> 16
    return s >> 16


def bf16_rne(x):
    """float32 to bf16 bits, round to nearest even (a NaN keeps its sign and top bits, made quiet)."""
    u = int(np.array([x], dtype=np.float32).view(np.uint32)[0])
    if (u & 0x7FFFFFFF) > 0x7F800000:
        return (u >> 16) | 0x0040
    return ((u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFFFFFF) >> 16


def adamw(p, m, v, g, coeffs):
    """One element of torch.optim.AdamW in float32, each operation rounded: new (p, m, v)."""
    lr, b1, b2, eps, wd, gs, step_size, inv_bc2 = coeffs
    g = f32(g * gs)
    m = f32(f32(b1 * m) + f32(f32(f32(1) - b1) * g))
    v = f32(f32(b2 * v) + f32(f32(f32(f32(1) - b2) * g) * g))
    denom = f32(f32(np.sqrt(v) * inv_bc2) + eps)
    p = f32(f32(p * f32(f32(1) - f32(lr * wd))) - f32(step_size * f32(m / denom)))
    return p, m, v


def master_store(cfg, st, element, new):
    if cfg["master"] != "bf16-sr":
        return new
    return fl([bf16_sr(new, counter_bits(cfg["seed"], st["step"], element)) << 16])[0]


def main_bf16_moments(cfg):
    """bf16 moments: element by element, read as float32, written rounded to nearest even; an element whose
    gradient is not finite keeps p, m and v."""
    n = cfg["n"]
    p = fl(cfg["p"]).copy()
    m = [0] * n  # bf16 bits
    v = [0] * n
    for st in cfg["steps"]:
        coeffs = fl(st["coeffs"])
        g = fl(st["g"])
        for i in range(n):
            if not np.isfinite(g[i]):
                continue
            new, mi, vi = adamw(p[i], fl([m[i] << 16])[0], fl([v[i] << 16])[0], g[i], coeffs)
            m[i], v[i] = bf16_rne(mi), bf16_rne(vi)
            p[i] = master_store(cfg, st, i, new)
    json.dump({"p": bits(p), "m": m, "v": v}, open(sys.argv[2], "w"))


def main():
    cfg = json.load(open(sys.argv[1]))
    if cfg.get("moments", "int8") == "bf16":
        return main_bf16_moments(cfg)
    n = cfg["n"]
    p = fl(cfg["p"]).copy()  # fp32 values (a bf16 master's are exact in fp32)
    m_codes = [nearest(SIGNED, f32(0))] * n
    v_codes = [nearest(UNSIGNED, f32(0))] * n
    nb = (n + 255) // 256
    m_abs = [f32(0)] * nb
    v_abs = [f32(0)] * nb
    for st in cfg["steps"]:
        g = fl(st["g"])
        for b in range(nb):
            lo, hi = b * 256, min(n, b * 256 + 256)
            m = [f32(SIGNED[c] * m_abs[b]) for c in m_codes[lo:hi]]
            v = [f32(UNSIGNED[c] * v_abs[b]) for c in v_codes[lo:hi]]
            for k in range(hi - lo):
                if not np.isfinite(g[lo + k]):
                    continue
                new, m[k], v[k] = adamw(p[lo + k], m[k], v[k], g[lo + k], fl(st["coeffs"]))
                p[lo + k] = master_store(cfg, st, lo + k, new)
            m_abs[b], m_codes[lo:hi] = quantize(np.array(m, dtype=f32), SIGNED)
            v_abs[b], v_codes[lo:hi] = quantize(np.array(v, dtype=f32), UNSIGNED, keep_nonzero=True)
    json.dump({"p": bits(p), "m": m_codes, "v": v_codes, "m_absmax": bits(m_abs), "v_absmax": bits(v_abs)},
              open(sys.argv[2], "w"))


main()
