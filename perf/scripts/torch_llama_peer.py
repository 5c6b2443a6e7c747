#!/usr/bin/env python3
"""A plain PyTorch Llama (no transformers: Hugging Face's LlamaForCausalLM written out, fp32 on the CPU)
that trains a Hugging Face model folder the way `tierzero train --init-from DIR --data FILE` does by
default: batches of consecutive windows from the token file's start, mean cross-entropy, the global
gradient norm clipped to 1.0, AdamW (betas 0.9/0.999, eps 1e-8, weight decay 0.01 on matrices and
embeddings only) at a constant learning rate. Prints {"losses": [...]} (one per step, before its update).
Reads safetensors and tokens with numpy (perf/scripts/peer_data.py), so it shares no code with tierzero."""
import argparse
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

from peer_data import read_folder, read_tokens, window


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def forward(cfg, p, inputs, targets):
    B, T = inputs.shape
    C, H, KV = cfg["hidden_size"], cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    hd = cfg.get("head_dim") or C // H
    eps = cfg["rms_norm_eps"]
    # LlamaRotaryEmbedding's angles, here in double and rounded once (as tierzero's table).
    inv = 1.0 / (cfg.get("rope_theta", 10000.0) ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    ang = torch.outer(torch.arange(T, dtype=torch.float64), inv)
    cos = torch.cat((ang.cos(), ang.cos()), -1).float()
    sin = torch.cat((ang.sin(), ang.sin()), -1).float()

    def rms(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w

    def lin(x, name):
        y = x @ p[name + ".weight"].t()
        return y + p[name + ".bias"] if name + ".bias" in p else y

    x = p["model.embed_tokens.weight"][inputs]
    mask = torch.full((T, T), float("-inf")).triu(1)
    for l in range(cfg["num_hidden_layers"]):
        q_ = "model.layers.%d." % l
        h = rms(x, p[q_ + "input_layernorm.weight"])
        q = lin(h, q_ + "self_attn.q_proj").view(B, T, H, hd).transpose(1, 2)
        k = lin(h, q_ + "self_attn.k_proj").view(B, T, KV, hd).transpose(1, 2)
        v = lin(h, q_ + "self_attn.v_proj").view(B, T, KV, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(H // KV, dim=1)  # repeat_kv
        v = v.repeat_interleave(H // KV, dim=1)
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(hd) + mask, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, H * hd)
        x = x + lin(y, q_ + "self_attn.o_proj")
        h = rms(x, p[q_ + "post_attention_layernorm.weight"])
        x = x + lin(F.silu(lin(h, q_ + "mlp.gate_proj")) * lin(h, q_ + "mlp.up_proj"), q_ + "mlp.down_proj")
    x = rms(x, p["model.norm.weight"])
    head = p["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings", False) else p["lm_head.weight"]
    logits = x @ head.t()
    return F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(-1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--folder", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--micro-batch", type=int, default=4)
    ap.add_argument("--seq-len", type=int, default=64)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--lr", type=float, default=3e-4)
    a = ap.parse_args()
    torch.set_num_threads(1)
    cfg = json.load(open(os.path.join(a.folder, "config.json")))
    p = {k: v.requires_grad_(True) for k, v in read_folder(a.folder).items() if k != "lm_head.weight" or not cfg.get("tie_word_embeddings")}
    toks = read_tokens(a.data)
    decay = [t for t in p.values() if t.dim() >= 2]
    rest = [t for t in p.values() if t.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": rest, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.999), eps=1e-8)
    B, T = a.micro_batch, a.seq_len
    losses = []
    for s in range(a.steps):
        inputs, targets = window(toks, s, B, T)
        opt.zero_grad()
        loss = forward(cfg, p, inputs, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(p.values()), 1.0)
        opt.step()
        losses.append(loss.item())
    print(json.dumps({"losses": losses}))


if __name__ == "__main__":
    sys.exit(main())
