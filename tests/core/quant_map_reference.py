# Prints the float32 bits of the 8-bit dynamic maps pinned in quant_map_test.cc, two ways:
#  - "torch": bitsandbytes' create_dynamic_map(signed, max_exponent_bits=7, total_bits=8) as bitsandbytes
#    writes it, run with torch (Debian's python3-torch 1.13, on the CPU);
#  - "exact": the same construction with each value computed in float64 and rounded once to float32,
#    which is what tierzero builds (core/quant_map.cc).
# usage: /usr/bin/python3 quant_map_reference.py
import struct

import numpy as np


def torch_map(signed):
    import torch
    data = []
    non_sign_bits = 7
    for i in range(7):
        items = int(2 ** (i + non_sign_bits - 7) + 1 if signed else 2 ** (i + non_sign_bits - 7 + 1) + 1)
        boundaries = torch.linspace(0.1, 1, items)
        means = (boundaries[:-1] + boundaries[1:]) / 2.0
        data += ((10 ** (-6 + i)) * means).tolist()
        if signed:
            data += (-(10 ** (-6 + i)) * means).tolist()
    data.append(0)
    data.append(1.0)
    data.sort()
    return np.array(torch.tensor(data).numpy(), dtype=np.float32)


def exact_map(signed):
    data = []
    for i in range(7):
        n = 2 ** i + 1 if signed else 2 ** (i + 1) + 1
        b = [0.1 + 0.9 * k / (n - 1) for k in range(n)]
        means = [(b[k] + b[k + 1]) / 2 for k in range(n - 1)]
        data += [10.0 ** (i - 6) * m for m in means]
        if signed:
            data += [-(10.0 ** (i - 6)) * m for m in means]
    data += [0.0, 1.0]
    return np.array(sorted(data), dtype=np.float32)


if __name__ == "__main__":
    for kind, build in (("exact", exact_map), ("torch", torch_map)):
        for signed in (True, False):
            m = build(signed)
            print(kind, "signed" if signed else "unsigned",
                  " ".join("%08x" % struct.unpack("<I", struct.pack("<f", float(v)))[0] for v in m))
