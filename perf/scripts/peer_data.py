"""What the PyTorch peers read the way tierzero reads it, with numpy alone (no code shared with tierzero):
safetensors files and Hugging Face folders of them (F32, F16, BF16 as fp32 tensors), llm.c token files
(uint16 20240520/v1, uint32 20240801/v7, or raw uint16) and the loader's windows at one rank
(docs/data.md: window i is the B*T + 1 tokens from i*B*T, the inputs B rows of T, the targets shifted by
one; the windows in order, wrapping after floor((N - 1) / (B*T)))."""
import json
import os
import struct

import numpy as np
import torch


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b = data[t["data_offsets"][0]:t["data_offsets"][1]]
        if t["dtype"] == "F32":
            a = np.frombuffer(b, "<f4")
        elif t["dtype"] == "F16":
            a = np.frombuffer(b, "<f2").astype(np.float32)
        elif t["dtype"] == "BF16":
            a = (np.frombuffer(b, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            raise ValueError("%s: tensor %s is %s, not F32, F16 or BF16" % (path, name, t["dtype"]))
        out[name] = torch.tensor(a.reshape(t["shape"]).copy(), dtype=torch.float32)
    return out


def read_folder(d):
    """Every tensor of a Hugging Face folder (model.safetensors, or the shards its index names), or of one
    .safetensors file."""
    if os.path.isfile(d):
        return read_safetensors(d)
    idx = os.path.join(d, "model.safetensors.index.json")
    w = {}
    files = sorted(set(json.load(open(idx))["weight_map"].values())) if os.path.exists(idx) else ["model.safetensors"]
    for f in files:
        w.update(read_safetensors(os.path.join(d, f)))
    return w


def read_tokens(path):
    """The tokens of an llm.c file (its 256-int32 header's magic says the width) or a raw uint16 file."""
    raw = open(path, "rb").read()
    head = np.frombuffer(raw[:1024], "<i4") if len(raw) >= 1024 else None
    if head is not None and head[0] == 20240520:
        return np.frombuffer(raw[1024:], "<u2")[:head[2]].astype(np.int64)
    if head is not None and head[0] == 20240801:
        return np.frombuffer(raw[1024:], "<u4")[:head[2]].astype(np.int64)
    return np.frombuffer(raw, "<u2").astype(np.int64)


def write_tokens(path, tokens, vocab):
    """llm.c's format: uint16 (20240520, version 1) for vocabularies up to 65,536, else uint32 (20240801, 7)."""
    wide = vocab > 65536
    head = np.zeros(256, "<i4")
    head[0], head[1], head[2] = (20240801, 7, len(tokens)) if wide else (20240520, 1, len(tokens))
    with open(path + ".tmp", "wb") as f:
        f.write(head.tobytes())
        f.write(np.asarray(tokens, "<u4" if wide else "<u2").tobytes())
    os.replace(path + ".tmp", path)


def window(tokens, i, B, T):
    """Window i (wrapping) as (inputs, targets), each a [B, T] int64 tensor."""
    n = (len(tokens) - 1) // (B * T)
    if n < 1:
        raise ValueError("%d tokens hold no window of B*T + 1 = %d" % (len(tokens), B * T + 1))
    s = (i % n) * B * T
    chunk = torch.from_numpy(np.ascontiguousarray(tokens[s:s + B * T + 1]))
    return chunk[:-1].view(B, T), chunk[1:].view(B, T)
