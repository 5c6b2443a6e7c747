#!/usr/bin/python3
"""The peer for `tierzero bench step --model <Llama-family preset>`: one training step (forward, backward,
AdamW) of the same Llama in plain PyTorch (Debian's python3-torch 1.13, fp32, no transformers): the model
of torch_llama_peer.py (Hugging Face's LlamaForCausalLM written out: RMSNorm, RoPE, grouped-query
attention through repeat_kv, SwiGLU, tied or untied head, Qwen2's q/k/v biases) with random weights, the
same batch and thread count. Prints one JSON line."""
import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_llama_peer import forward  # noqa: E402

# The presets' published config.json fields (as tierzero's llama family holds them).
PRESETS = {
    "llama-tiny": dict(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, hidden_size=64,
                       head_dim=16, intermediate_size=160, vocab_size=256, rms_norm_eps=1e-5, rope_theta=10000.0,
                       tie_word_embeddings=False, qkv_bias=False),
    "qwen2.5-0.5b": dict(num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2, hidden_size=896,
                         head_dim=64, intermediate_size=4864, vocab_size=151936, rms_norm_eps=1e-6,
                         rope_theta=1000000.0, tie_word_embeddings=True, qkv_bias=True),
    "llama3.2-1b": dict(num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8, hidden_size=2048,
                        head_dim=64, intermediate_size=8192, vocab_size=128256, rms_norm_eps=1e-5,
                        rope_theta=500000.0, tie_word_embeddings=True, qkv_bias=False),
}


def params(cfg):
    """Hugging Face's names and [out, in] shapes; matrices ~ N(0, 0.02), norms 1, biases 0."""
    C, H, KV, hd, I, V = (cfg[k] for k in ("hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim",
                                           "intermediate_size", "vocab_size"))
    shapes = {"model.embed_tokens.weight": (V, C), "model.norm.weight": (C,)}
    if not cfg["tie_word_embeddings"]:
        shapes["lm_head.weight"] = (V, C)
    for l in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % l
        shapes.update({p + "input_layernorm.weight": (C,), p + "post_attention_layernorm.weight": (C,),
                       p + "self_attn.q_proj.weight": (H * hd, C), p + "self_attn.k_proj.weight": (KV * hd, C),
                       p + "self_attn.v_proj.weight": (KV * hd, C), p + "self_attn.o_proj.weight": (C, H * hd),
                       p + "mlp.gate_proj.weight": (I, C), p + "mlp.up_proj.weight": (I, C),
                       p + "mlp.down_proj.weight": (C, I)})
        if cfg["qkv_bias"]:
            shapes.update({p + "self_attn.q_proj.bias": (H * hd,), p + "self_attn.k_proj.bias": (KV * hd,),
                           p + "self_attn.v_proj.bias": (KV * hd,)})
    out = {}
    for name, s in shapes.items():
        t = torch.empty(s)
        if len(s) == 2:
            torch.nn.init.normal_(t, 0.0, 0.02)
        elif name.endswith(".bias"):
            t.zero_()
        else:
            t.fill_(1.0)
        out[name] = t.requires_grad_(True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="qwen2.5-0.5b", choices=sorted(PRESETS))
    ap.add_argument("--micro-batch", type=int, default=4)
    ap.add_argument("--seq-len", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup-steps", type=int, default=1)
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(a.threads)
    cfg = PRESETS[a.model]
    p = params(cfg)
    decay = [t for t in p.values() if t.dim() >= 2]
    rest = [t for t in p.values() if t.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": rest, "weight_decay": 0.0}],
                            lr=1e-4, betas=(0.9, 0.999), eps=1e-8)
    idx = torch.randint(0, cfg["vocab_size"], (a.micro_batch, a.seq_len))
    tgt = torch.randint(0, cfg["vocab_size"], (a.micro_batch, a.seq_len))
    times, fwd, bwd, adam, losses = [], [], [], [], []
    for s in range(a.warmup_steps + a.steps):
        t0 = time.perf_counter()
        loss = forward(cfg, p, idx, tgt)
        t1 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        t3 = time.perf_counter()
        losses.append(loss.item())
        if s >= a.warmup_steps:
            times.append(t3 - t0), fwd.append(t1 - t0), bwd.append(t2 - t1), adam.append(t3 - t2)
    ms = lambda v: 1000 * statistics.median(v)
    print(json.dumps({"peer": "pytorch " + torch.__version__, "model": a.model, "threads": a.threads,
                      "ms_per_step": ms(times), "ms_forward": ms(fwd), "ms_backward": ms(bwd),
                      "ms_optimizer": ms(adam), "steps": a.steps, "losses": losses}))


if __name__ == "__main__":
    main()
