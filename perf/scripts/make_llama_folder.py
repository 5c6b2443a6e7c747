#!/usr/bin/env python3
"""Writes a Hugging Face Llama-family model folder with numpy alone (no torch, no transformers), as
save_pretrained lays it out: config.json, and model.safetensors or shards with model.safetensors.index.json,
every tensor under Hugging Face's name in F32, F16 or BF16, `__metadata__ {"format": "pt"}` in each file.
Weights are seeded: matrices and embeddings N(0, 0.02), RMSNorm weights 1 + N(0, 0.1), biases N(0, 0.02).
With --tokens it also writes an llm.c token file (magic 20240520, version 1, uint16) of seeded tokens.

The folder is what tierzero's --init-from reads and perf/scripts/torch_llama_peer.py trains in plain PyTorch:
an independent writer, so neither side reads its own output."""
import argparse
import json
import os
import struct
import sys

import numpy as np


def bf16_bits(a):
    """float32 -> bfloat16 bits, rounding to nearest even (NaN stays NaN)."""
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return r


def encode(a, dtype):
    if dtype == "F32":
        return a.astype("<f4").tobytes()
    if dtype == "F16":
        return a.astype("<f2").tobytes()
    return bf16_bits(a).astype("<u2").tobytes()


def write_safetensors(path, tensors, dtype):
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        b = encode(tensors[name], dtype)
        header[name] = {"dtype": dtype, "shape": list(tensors[name].shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--arch", default="LlamaForCausalLM", choices=["LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM"])
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--head-dim", type=int, default=16)
    p.add_argument("--ffn", type=int, default=160)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--positions", type=int, default=128)
    p.add_argument("--theta", type=float, default=10000.0)
    p.add_argument("--eps", type=float, default=1e-5)
    p.add_argument("--tied", action="store_true")
    p.add_argument("--dtype", default="F32", choices=["F32", "F16", "BF16"])
    p.add_argument("--shards", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--tokens", default="")
    p.add_argument("--num-tokens", type=int, default=8192)
    a = p.parse_args()

    rng = np.random.default_rng(a.seed)
    C, H, KV, hd, I, V = a.width, a.heads, a.kv_heads, a.head_dim, a.ffn, a.vocab
    qwen2 = a.arch == "Qwen2ForCausalLM"
    w = {}
    mat = lambda *s: (rng.standard_normal(s) * 0.02).astype(np.float32)
    norm = lambda n: (1 + 0.1 * rng.standard_normal(n)).astype(np.float32)
    w["model.embed_tokens.weight"] = mat(V, C)
    for l in range(a.layers):
        q = "model.layers.%d." % l
        w[q + "input_layernorm.weight"] = norm(C)
        w[q + "self_attn.q_proj.weight"] = mat(H * hd, C)
        w[q + "self_attn.k_proj.weight"] = mat(KV * hd, C)
        w[q + "self_attn.v_proj.weight"] = mat(KV * hd, C)
        if qwen2:
            w[q + "self_attn.q_proj.bias"] = mat(H * hd)
            w[q + "self_attn.k_proj.bias"] = mat(KV * hd)
            w[q + "self_attn.v_proj.bias"] = mat(KV * hd)
        w[q + "self_attn.o_proj.weight"] = mat(C, H * hd)
        w[q + "post_attention_layernorm.weight"] = norm(C)
        w[q + "mlp.gate_proj.weight"] = mat(I, C)
        w[q + "mlp.up_proj.weight"] = mat(I, C)
        w[q + "mlp.down_proj.weight"] = mat(C, I)
    w["model.norm.weight"] = norm(C)
    if not a.tied:
        w["lm_head.weight"] = mat(V, C)

    os.makedirs(a.out, exist_ok=True)
    cfg = {"architectures": [a.arch], "model_type": {"LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral",
                                                      "Qwen2ForCausalLM": "qwen2"}[a.arch],
           "hidden_size": C, "num_hidden_layers": a.layers, "num_attention_heads": H, "num_key_value_heads": KV,
           "head_dim": hd, "intermediate_size": I, "vocab_size": V, "max_position_embeddings": a.positions,
           "rms_norm_eps": a.eps, "rope_theta": a.theta, "rope_scaling": None, "tie_word_embeddings": a.tied,
           "hidden_act": "silu", "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[a.dtype]}
    if a.arch == "LlamaForCausalLM":
        cfg.update({"attention_bias": False, "mlp_bias": False})
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    names = sorted(w)
    if a.shards == 1:
        write_safetensors(os.path.join(a.out, "model.safetensors"), w, a.dtype)
    else:
        wm = {}
        for s in range(a.shards):
            file = "model-%05d-of-%05d.safetensors" % (s + 1, a.shards)
            part = {n: w[n] for i, n in enumerate(names) if i % a.shards == s}
            write_safetensors(os.path.join(a.out, file), part, a.dtype)
            wm.update({n: file for n in part})
        with open(os.path.join(a.out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": 0}, "weight_map": wm}, f, indent=2)
    if a.tokens:
        toks = rng.integers(0, V, a.num_tokens).astype("<u2")
        header = np.zeros(256, dtype="<i4")
        header[0], header[1], header[2] = 20240520, 1, a.num_tokens
        with open(a.tokens, "wb") as f:
            f.write(header.tobytes())
            f.write(toks.tobytes())


if __name__ == "__main__":
    sys.exit(main())
