#!/usr/bin/env python3
"""The Hugging Face peer of a `tierzero train` Llama step on the GPU: transformers' LlamaForCausalLM with
SDPA attention, loaded from the Hugging Face folder tierzero wrote (--save-hf), trained on the same token
file's windows with tierzero's defaults (bf16 autocast over fp32 weights, mean cross-entropy, the global
norm clipped to 1.0, fused AdamW with decay on matrices and embeddings), timed as `tierzero bench mfu`
reduces a run (the median step after the warm-up ones, synchronised) so step times compare as a ratio.
Prints one JSON line (schema tierzero-hf-peer/1) with the losses of every step. Exit 0 ran, 1 error (one
line on stderr), 77 cannot run here (no GPU, no transformers), the reason on stderr's last line."""
import argparse
import json
import os
import statistics
import sys
import time

T_PROCESS = time.perf_counter()

import torch
import torch.nn.functional as F

from peer_data import read_tokens, window
from torch_gpt2_peer import EXIT_SKIP, Skip, autocast_works, bf16_dense_peak, first_line, make_adamw, timed_steps

SCHEMA = "tierzero-hf-peer/1"


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folder", required=True, help="a Hugging Face Llama folder (tierzero --save-hf)")
    ap.add_argument("--data", required=True, help="an llm.c token file, read in tierzero's window order")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
    ap.add_argument("--micro-batch", type=int, default=4)
    ap.add_argument("--seq-len", type=int, default=1024)
    ap.add_argument("--grad-accum", type=int, default=1)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--skip", type=int, default=2)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--beta1", type=float, default=0.9)
    ap.add_argument("--beta2", type=float, default=0.999)
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument("--peak-tflops", type=float, default=None)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if not 0 <= a.skip < a.steps:
        ap.error("--skip must be in [0, --steps)")
    return a


def load(a, fallbacks):
    try:
        from transformers import LlamaForCausalLM
    except ImportError as e:
        raise Skip("transformers cannot be imported (%s): the Hugging Face peer cannot run" % first_line(e))
    try:
        model = LlamaForCausalLM.from_pretrained(a.folder, torch_dtype=torch.float32, attn_implementation="sdpa")
        impl = "sdpa"
    except (TypeError, ValueError) as e:  # a transformers without attn_implementation
        fallbacks.append("attn_implementation='sdpa' refused (%s): the default attention" % first_line(e))
        model = LlamaForCausalLM.from_pretrained(a.folder, torch_dtype=torch.float32)
        impl = "default"
    return model.to(a.device), impl


def run(a):
    fallbacks = []
    if a.device == "cuda" and not torch.cuda.is_available():
        raise Skip("--device cuda but torch %s sees no GPU: no GPU here" % torch.__version__)
    cfg = json.load(open(os.path.join(a.folder, "config.json")))
    model, impl = load(a, fallbacks)
    model.train()
    opt, fused = make_adamw(model, a, fallbacks)
    bf16 = a.dtype == "bf16" and autocast_works(a.device, fallbacks)
    toks = read_tokens(a.data)
    batches = [[tuple(t.to(a.device) for t in window(toks, s * a.grad_accum + m, a.micro_batch, a.seq_len))
                for m in range(a.grad_accum)] for s in range(a.steps)]
    sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)
    if a.device == "cuda":
        torch.cuda.reset_peak_memory_stats()

    def loss_of(x, y):  # no labels: transformers would shift them again
        logits = model(input_ids=x).logits
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), y.reshape(-1))

    times, losses = timed_steps(loss_of, model.parameters, opt, batches, a, bf16, sync)
    ms = statistics.median(1e3 * t for t in times[a.skip:])
    tokens = a.micro_batch * a.seq_len * a.grad_accum
    # model/llama_family.cc's flops_per_token: 6 N + 12 L H hd T, N without an untied embedding (a lookup).
    H, L = cfg["num_attention_heads"], cfg["num_hidden_layers"]
    hd = cfg.get("head_dim") or cfg["hidden_size"] // H
    n = sum(p.numel() for p in model.parameters())
    if not cfg.get("tie_word_embeddings", False):
        n -= model.get_input_embeddings().weight.numel()
    flops_per_token = 6.0 * n + 12.0 * L * H * hd * a.seq_len
    tokens_per_s = tokens / (ms / 1e3)
    name = torch.cuda.get_device_name(0) if a.device == "cuda" else "cpu"
    peak, source = (a.peak_tflops, "--peak-tflops") if a.peak_tflops else (
        bf16_dense_peak(name) if a.device == "cuda" else (None, "cpu: no peak"))
    tflops = tokens_per_s * flops_per_token / 1e12
    import transformers
    return {"schema": SCHEMA, "model": "LlamaForCausalLM", "folder": a.folder, "data": a.data, "device": a.device,
            "device_name": name, "torch_version": torch.__version__, "transformers_version": transformers.__version__,
            "attn_implementation": impl, "dtype": a.dtype, "dtype_run": "bf16" if bf16 else "fp32",
            "fused_adamw": fused, "micro_batch": a.micro_batch, "seq_len": a.seq_len, "grad_accum": a.grad_accum,
            "steps": a.steps, "skip": a.skip, "tokens_per_step": tokens, "ms_per_step": ms,
            "ms_per_step_all": [1e3 * t for t in times], "tokens_per_s": tokens_per_s,
            "parameters_counted": n, "flops_per_token": flops_per_token, "tflops": tflops, "peak_tflops": peak,
            "peak_source": source, "mfu": tflops / peak if peak else None, "losses": losses,
            "peak_memory_bytes": torch.cuda.max_memory_allocated() if a.device == "cuda" else None,
            "fallbacks": fallbacks}


def main(argv):
    a = parse_args(argv)
    try:
        out = run(a)
    except Skip as e:
        print("hf_llama_peer: skipped: %s" % e, file=sys.stderr)
        return EXIT_SKIP
    except Exception as e:
        print("hf_llama_peer: error: %s" % first_line(e), file=sys.stderr)
        return 1
    out["seconds_total"] = time.perf_counter() - T_PROCESS
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
