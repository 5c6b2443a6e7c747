#!/usr/bin/env python3
"""The PyTorch peer of a `tierzero train` step on the GPU: one GPT-2 optimizer step (grad-accum micro-steps,
bf16 autocast, clipping, fused AdamW, scaled_dot_product_attention) on the same model, batch and sequence
length, timed the way `tierzero bench mfu` reduces a training run, so step time and MFU compare as a ratio.

Runs under PyTorch 2.x on CUDA and under Debian's torch 1.13 on the CPU (CI, tiny sizes), falling back where a
feature is missing; every fallback is a sentence in the JSON's "fallbacks". Exit codes: 0 ran; 1 error (one
line on stderr); 77 cannot run here (no GPU for --device cuda, no torch.compile for --compile 1), the reason
on the last line of stderr."""
import argparse
import json
import math
import platform
import resource
import statistics
import sys
import time

T_PROCESS = time.perf_counter()  # before torch's import, which seconds_total includes

import torch
import torch.nn as nn
import torch.nn.functional as F

SCHEMA = "tierzero-torch-peer/1"
EXIT_SKIP = 77

# model/gpt_family.cc's presets: (n_layer, n_head, n_embd, vocab, max_seq_len); vocab padded to 128.
PRESETS = {
    "tiny": (2, 4, 64, 256, 64),
    "gpt2": (12, 12, 768, 50257, 1024),
    "gpt2-medium": (24, 16, 1024, 50257, 1024),
    "gpt2-large": (36, 20, 1280, 50257, 1024),
    "gpt2-xl": (48, 25, 1600, 50257, 1024),
}

# zero/step_time.cc's model_flops (GPT-2's flops_per_token), per token; N counts wte's padded rows, as tierzero allocates and trains them.
FLOPS_FORMULA = ("6 * N + 12 * n_layer * n_embd * seq_len per token, N = params excluding wpe "
                 "(wte with its padded vocabulary rows, counted once: tied to the LM head)")


# Hugging Face GPT-2's names (as tierzero's --save-hf and --save-safetensors write them, Conv1D matrices
# [in, out]) for this file's modules (nn.Linear matrices [out, in]).
HF_NAMES = {"ln_1.weight": "ln_1.weight", "ln_1.bias": "ln_1.bias", "ln_2.weight": "ln_2.weight",
            "ln_2.bias": "ln_2.bias", "attn.c_attn.weight": "c_attn.weight", "attn.c_attn.bias": "c_attn.bias",
            "attn.c_proj.weight": "c_proj.weight", "attn.c_proj.bias": "c_proj.bias",
            "mlp.c_fc.weight": "c_fc.weight", "mlp.c_fc.bias": "c_fc.bias", "mlp.c_proj.weight": "mlp_proj.weight",
            "mlp.c_proj.bias": "mlp_proj.bias"}


@torch.no_grad()
def load_hf_gpt2(model, path):
    """Copies a Hugging Face GPT-2 folder's or file's tensors into the model; every tensor must be there."""
    from peer_data import read_folder
    w = {k[len("transformer."):] if k.startswith("transformer.") else k: v for k, v in read_folder(path).items()}
    mine = dict(model.named_parameters())
    missing = []
    for name, p in mine.items():
        if name == "wte.weight":
            src = w.get("wte.weight")
            if src is not None:
                p.zero_()
                p[:src.shape[0]].copy_(src)  # the padded vocabulary rows stay 0, as tierzero's
                continue
        elif name.startswith("h."):
            l, rest = name[2:].split(".", 1)
            hf = next((k for k, v in HF_NAMES.items() if v == rest), None)
            src = w.get("h.%s.%s" % (l, hf)) if hf else None
            if src is not None:
                p.copy_(src.t() if src.dim() == 2 else src)
                continue
        elif name in w:
            p.copy_(w[name])
            continue
        missing.append(name)
    if missing:
        raise ValueError("%s has no %s (a Hugging Face GPT-2 folder or file, as tierzero --save-hf writes)" %
                         (path, ", ".join(missing[:5])))


class OneLineParser(argparse.ArgumentParser):
    """Usage errors are errors: one line on stderr, exit 1 (argparse's own is the usage text and 2)."""

    def error(self, message):
        print("torch_gpt2_peer: error: %s (see --help)" % message, file=sys.stderr)
        sys.exit(1)


class Skip(Exception):
    """This run cannot happen on this machine or torch; not a failure of the peer."""


def pad_vocab(v):
    return (v + 127) // 128 * 128


def bf16_dense_peak(name):
    """perf/gpu_limits.cc's bf16_dense_peak, for the cards it names at 989 or a variant of them."""
    n = name.upper()
    if "GH200" in n:
        return 989.0, "preset gh200"
    if "H200 NVL" in n or "H100 NVL" in n:
        return 835.0, name + ": NVL datasheet, 835 TFLOP/s bf16 dense"
    if "H100" in n and "PCIE" in n:
        return 756.0, name + ": H100 PCIe datasheet, 756 TFLOP/s bf16 dense"
    if "H200" in n or "H100" in n or "H800" in n:
        return 989.0, name + ": SXM datasheet, 989 TFLOP/s bf16 dense"
    return None, "'" + name + "' has no default peak: pass --peak-tflops"


class Block(nn.Module):
    """Pre-LayerNorm GPT-2 block, as perf/scripts/torch_gpt2_step.py and tierzero's model/gpt.cc."""

    def __init__(self, C, H, maxT, sdpa, dev):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(C, device=dev), nn.LayerNorm(C, device=dev)
        self.c_attn, self.c_proj = nn.Linear(C, 3 * C, device=dev), nn.Linear(C, C, device=dev)
        self.c_fc, self.mlp_proj = nn.Linear(C, 4 * C, device=dev), nn.Linear(4 * C, C, device=dev)
        self.H, self.sdpa = H, sdpa
        if not sdpa:  # the explicit path's causal mask, built once on the device
            self.register_buffer("mask", torch.tril(torch.ones(maxT, maxT, dtype=torch.bool, device=dev)),
                                 persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.H, C // self.H).transpose(1, 2) for t in (q, k, v))
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) / math.sqrt(C // self.H)
            att = F.softmax(att.masked_fill(~self.mask[:T, :T], float("-inf")), dim=-1)
            y = att @ v
        x = x + self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, L, H, C, V, Vp, maxT, sdpa, dev):
        super().__init__()
        self.V = V
        self.wte, self.wpe = nn.Embedding(Vp, C, device=dev), nn.Embedding(maxT, C, device=dev)
        self.h = nn.ModuleList(Block(C, H, maxT, sdpa, dev) for _ in range(L))
        self.ln_f = nn.LayerNorm(C, device=dev)
        self.register_buffer("pos", torch.arange(maxT, device=dev), persistent=False)
        self._init(L)

    @torch.no_grad()
    def _init(self, L):
        # model/gpt_init.h: N(0, 0.02), residual projections N(0, 0.02 / sqrt(2 L)), biases 0, LayerNorm 1,
        # padded vocabulary rows 0.
        for name, p in self.named_parameters():
            if p.dim() == 1:
                p.fill_(1.0 if name.endswith(".weight") else 0.0)  # LayerNorm weights; biases
            else:
                std = 0.02 / math.sqrt(2 * L) if name.endswith(("c_proj.weight", "mlp_proj.weight")) else 0.02
                p.normal_(0.0, std)
        self.wte.weight[self.V:].zero_()

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(self.pos[:T])
        for b in self.h:
            x = b(x)
        logits = self.ln_f(x) @ self.wte.weight.t()  # tied LM head, over the padded vocabulary
        # The softmax covers the real vocabulary only: padding rows never get probability mass (tierzero's
        # softmax_xent over vocab_size columns of a padded_vocab_size stride).
        logits = logits.view(-1, logits.size(-1))[:, :self.V]
        return F.cross_entropy(logits.float(), targets.reshape(-1))


def make_adamw(model, a, fallbacks):
    """AdamW with weight decay on 2-D tensors only (model/gpt_init.h's is_decayed): fused, else foreach,
    else the default loop; returns (optimizer, fused)."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": a.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    kw = dict(lr=a.lr, betas=(a.beta1, a.beta2), eps=a.eps)
    try:
        return torch.optim.AdamW(groups, fused=True, **kw), True
    except (TypeError, RuntimeError, ValueError) as e:
        why = first_line(e)
    try:
        opt = torch.optim.AdamW(groups, foreach=True, **kw)
        fallbacks.append("fused AdamW unavailable (%s): foreach AdamW instead" % why)
    except (TypeError, RuntimeError, ValueError) as e:
        opt = torch.optim.AdamW(groups, **kw)
        fallbacks.append("fused AdamW unavailable (%s), foreach too (%s): the default AdamW loop" %
                         (why, first_line(e)))
    return opt, False


def first_line(e):
    text = str(e).strip().splitlines()
    return (type(e).__name__ + ": " + (text[0] if text else ""))[:300]


def autocast_works(device, fallbacks):
    """Whether bf16 autocast runs forward and backward of a small layer on this device and torch."""
    try:
        lin = nn.Linear(16, 16, device=device)
        with torch.autocast(device_type=device, dtype=torch.bfloat16):
            y = F.gelu(lin(torch.randn(4, 16, device=device)), approximate="tanh")
        y.float().sum().backward()
        return True
    except (RuntimeError, TypeError, AttributeError) as e:
        fallbacks.append("bf16 autocast failed on %s (%s): fp32 instead" % (device, first_line(e)))
        return False


def timed_steps(loss_of, params, opt, batches, a, bf16, sync):
    """One optimizer step per entry of batches (its micro-batches' mean loss, bf16 autocast when asked, the
    global norm clipped to --grad-clip, the optimizer's step), each timed from a synchronised start to a
    synchronised end. Returns (seconds per step, loss per step)."""
    times, losses = [], []
    for step, micro in enumerate(batches):
        sync()
        t0 = time.perf_counter()
        total = torch.zeros((), device=a.device)
        for x, y in micro:
            with torch.autocast(device_type=a.device, dtype=torch.bfloat16, enabled=bf16):
                loss = loss_of(x, y) / len(micro)
            loss.backward()
            total += loss.detach()
        if a.grad_clip > 0:
            nn.utils.clip_grad_norm_(params(), a.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync()
        times.append(time.perf_counter() - t0)
        losses.append(total.item())
        if not math.isfinite(losses[-1]):
            raise RuntimeError("loss is %r at step %d: lower --lr" % (losses[-1], step + 1))
    return times, losses


def parse_args(argv):
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=list(PRESETS), default="gpt2-xl")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16",
                    help="bf16: autocast for forward and loss, fp32 master weights and optimizer")
    ap.add_argument("--micro-batch", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=1024)
    ap.add_argument("--grad-accum", type=int, default=4)
    ap.add_argument("--steps", type=int, default=6, help="optimizer steps in all, --skip of them not measured")
    ap.add_argument("--skip", type=int, default=2, help="first steps left out (warm-up, compilation)")
    ap.add_argument("--compile", type=int, choices=[0, 1], default=0, help="torch.compile the model")
    ap.add_argument("--init-from", default=None,
                    help="a Hugging Face GPT-2 folder or safetensors file (tierzero --save-hf) to start from, "
                         "instead of the seeded initialisation")
    ap.add_argument("--data", default=None,
                    help="an llm.c token file: micro-step m of step s trains on window s * grad_accum + m, as "
                         "tierzero train --data reads it at one rank (default: one fixed random batch)")
    ap.add_argument("--peak-tflops", type=float, default=None,
                    help="per-device peak for MFU (default: from the GPU's name, as tierzero bench mfu)")
    # tierzero train's defaults (launch/train_flags.cc, zero/zero_options.h), so both sides step the same.
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--beta1", type=float, default=0.9)
    ap.add_argument("--beta2", type=float, default=0.999)
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--weight-decay", type=float, default=0.01, help="on 2-D tensors only")
    ap.add_argument("--grad-clip", type=float, default=1.0, help="global gradient norm clip (0: off)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    ap.add_argument("--json", action="store_true", help="print only the one JSON line")
    a = ap.parse_args(argv)
    for name in ("micro_batch", "seq_len", "grad_accum", "steps"):
        if getattr(a, name) < 1:
            ap.error("--%s must be at least 1" % name.replace("_", "-"))
    if not 0 <= a.skip < a.steps:
        ap.error("--skip must be in [0, --steps): no step would be measured")
    return a


def header(a, fallbacks):
    cuda = a.device == "cuda"
    return {
        "schema": SCHEMA, "model": a.model, "device": a.device,
        "device_name": torch.cuda.get_device_name(0) if cuda else (platform.processor() or "cpu"),
        "torch_version": torch.__version__, "cuda_version": torch.version.cuda,
        "dtype": a.dtype, "micro_batch": a.micro_batch, "seq_len": a.seq_len, "grad_accum": a.grad_accum,
        "steps": a.steps, "skip": a.skip, "compiled": False, "fused_adamw": False,
        "sdpa": hasattr(F, "scaled_dot_product_attention"), "fallbacks": fallbacks,
        "optimizer": {"lr": a.lr, "betas": [a.beta1, a.beta2], "eps": a.eps, "weight_decay": a.weight_decay,
                      "grad_clip": a.grad_clip},
        "seed": a.seed, "threads": torch.get_num_threads(),
    }


def run(a):
    fallbacks = []
    if a.device == "cuda" and not torch.cuda.is_available():
        build = "built for CUDA " + torch.version.cuda if torch.version.cuda else "a CPU-only build"
        raise Skip("--device cuda but torch %s (%s) sees no GPU: no GPU here" % (torch.__version__, build))
    if a.threads:
        torch.set_num_threads(a.threads)
    out = header(a, fallbacks)
    if a.compile and not hasattr(torch, "compile"):
        fallbacks.append("torch.compile is absent in torch %s: the compiled stage cannot run" % torch.__version__)
        out["skipped"] = fallbacks[-1]
        return out, Skip("torch.compile is absent in torch %s (added in 2.0): compiled stage skipped" %
                         torch.__version__)
    if not out["sdpa"]:
        fallbacks.append("F.scaled_dot_product_attention is absent in torch %s: explicit masked softmax "
                         "attention instead" % torch.__version__)

    L, H, C, V, maxT = PRESETS[a.model]
    Vp, maxT = pad_vocab(V), max(maxT, a.seq_len)  # the position table grows to --seq-len, as tierzero's
    dev = torch.device(a.device)
    torch.manual_seed(a.seed)
    model = GPT(L, H, C, V, Vp, maxT, out["sdpa"], dev)
    if a.init_from:
        load_hf_gpt2(model, a.init_from)
        out["init_from"] = a.init_from
    params = sum(p.numel() for p in model.parameters())  # the tied wte counted once
    no_wpe = params - model.wpe.weight.numel()
    opt, out["fused_adamw"] = make_adamw(model, a, fallbacks)
    bf16 = a.dtype == "bf16" and autocast_works(a.device, fallbacks)
    out["dtype_run"] = "bf16" if bf16 else "fp32"
    step_model = model
    if a.compile:
        step_model = torch.compile(model)
        out["compiled"] = True

    # One fixed batch of grad_accum micro-batches, random tokens uniform over the real vocabulary, the same
    # every step: both sides do the same work, and the loss falls as the model learns it. With --data, the
    # file's windows in tierzero's order.
    if a.data:
        from peer_data import read_tokens, window
        toks = read_tokens(a.data)
        batches = [[tuple(t.to(dev) for t in window(toks, s * a.grad_accum + m, a.micro_batch, a.seq_len))
                    for m in range(a.grad_accum)] for s in range(a.steps)]
        out["data"] = a.data
    else:
        g = torch.Generator().manual_seed(a.seed)
        data = torch.randint(0, V, (a.grad_accum, a.micro_batch, a.seq_len + 1), generator=g).to(dev)
        inputs, targets = data[..., :-1].contiguous(), data[..., 1:].contiguous()
        batches = [[(inputs[m], targets[m]) for m in range(a.grad_accum)]] * a.steps

    def sync():
        if a.device == "cuda":
            torch.cuda.synchronize()

    if a.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    times, losses = timed_steps(step_model, model.parameters, opt, batches, a, bf16, sync)

    measured = [1e3 * t for t in times[a.skip:]]
    ms = statistics.median(measured)
    # torch.compile compiles during the first step: its time past a measured step's is the compilation.
    out["first_step_s"] = times[0]
    if out["compiled"]:
        out["compile_s"] = max(0.0, times[0] - ms / 1e3)
    tokens = a.micro_batch * a.seq_len * a.grad_accum
    flops_per_token = 6.0 * no_wpe + 12.0 * L * C * a.seq_len
    tokens_per_s = tokens / (ms / 1e3)
    tflops = tokens_per_s * flops_per_token / 1e12
    peak, peak_source = a.peak_tflops, "--peak-tflops"
    if peak is None:
        peak, peak_source = bf16_dense_peak(out["device_name"]) if a.device == "cuda" else (None, "cpu: no peak")
    if a.device == "cuda":
        peak_mem = torch.cuda.max_memory_allocated()
    else:  # Linux reports ru_maxrss in KiB
        peak_mem = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out.update({
        "n_layer": L, "n_head": H, "n_embd": C, "vocab": V, "padded_vocab": Vp, "wpe_rows": maxT,
        "parameters": params, "parameters_no_wpe": no_wpe, "tokens_per_step": tokens,
        "ms_per_step": ms, "ms_per_step_all": [1e3 * t for t in times], "tokens_per_s": tokens_per_s,
        "flops_per_token": flops_per_token, "flops_formula": FLOPS_FORMULA, "tflops": tflops,
        "peak_tflops": peak, "peak_source": peak_source, "mfu": tflops / peak if peak else None,
        "losses": losses, "peak_memory_bytes": peak_mem,
    })
    return out, None


def summary(r):
    lines = ["torch peer: %s on %s (%s), torch %s, %s%s, micro-batch %d x seq %d x accum %d" %
             (r["model"], r["device"], r["device_name"], r["torch_version"], r.get("dtype_run", r["dtype"]),
              ", compiled" if r["compiled"] else "", r["micro_batch"], r["seq_len"], r["grad_accum"])]
    if "ms_per_step" in r:
        mfu = "%.1f%% MFU of %g" % (100 * r["mfu"], r["peak_tflops"]) if r["mfu"] is not None else "no MFU"
        lines.append("  %.1f ms/step (median of %d after %d skipped), %.0f tokens/s, %.2f TFLOP/s, %s" %
                     (r["ms_per_step"], r["steps"] - r["skip"], r["skip"], r["tokens_per_s"], r["tflops"], mfu))
        lines.append("  losses %s, peak memory %.1f MiB" %
                     (" ".join("%.4f" % x for x in r["losses"]), r["peak_memory_bytes"] / 2 ** 20))
    lines += ["  fallback: " + f for f in r["fallbacks"]]
    return "\n".join(lines)


def main(argv):
    a = parse_args(argv)
    try:
        out, skip = run(a)
    except Skip as e:
        print("torch_gpt2_peer: skipped: %s" % e, file=sys.stderr)
        return EXIT_SKIP
    except Exception as e:  # one clear line, as the stage records the last line of stderr
        oom = "out of memory" in str(e).lower() or type(e).__name__ == "OutOfMemoryError"
        hint = ": lower --micro-batch (raise --grad-accum to keep the tokens per step)" if oom else ""
        print("torch_gpt2_peer: error: %s%s" % (first_line(e), hint), file=sys.stderr)
        return 1
    out["seconds_total"] = time.perf_counter() - T_PROCESS
    if not a.json:
        print(summary(out))
    print(json.dumps(out))
    sys.stdout.flush()
    if skip:
        print("torch_gpt2_peer: skipped: %s" % skip, file=sys.stderr)
        return EXIT_SKIP
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
