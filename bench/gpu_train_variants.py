"""Where a PA6a training step's time goes on a GPU: the same seed and batches under variants of the loop, each timed
after a warm-up, beside plain eager fp32 PA6a code measured in the same run.

    python bench/gpu_train_variants.py --corpus bench/wheels/tinyshakespeare.txt     # on the GPU machine

The PA6a step is small (12 × 64 tokens, about 20 GFLOP with the 50,304-word head: tens of microseconds of an H200's
arithmetic), so a GPU spends it launching kernels and waiting for the host. The variants separate those costs:
the per-step `loss.item()` the pipeline's log reads (a host sync each step), the fused chunked head against one
cross-entropy, and torch.compile, with and without CUDA graphs ("reduce-overhead")."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def run(variant: str, iters: int, warmup: int, train_ids, device: str) -> dict:
    import numpy as np
    import torch

    from pipeline.lm.config import GPTConfig, TrainConfig
    from pipeline.lm.model import GPT
    from pipeline.lm.trainer import autocast, get_batch, lr_at, make_optimizer

    plain = variant.startswith("plain")
    precision = "fp32" if "fp32" in variant else "bf16"
    cfg = TrainConfig(max_iters=iters + warmup, precision=precision)
    torch.manual_seed(cfg.seed)
    model = GPT(GPTConfig()).to(device)
    optimizer = make_optimizer(model, cfg, fused=not plain)
    rng = np.random.default_rng(cfg.seed)
    fused_loss = "unfused" not in variant and not plain

    def step(x, y):
        with autocast(precision, device):
            _, loss = model(x, y, fused_loss=fused_loss)
        loss.backward()
        return loss

    if "compile-graphs" in variant:
        step = torch.compile(step, mode="reduce-overhead")
    elif "compile" in variant:
        step = torch.compile(step)
    sync_each_step = "nosync" not in variant
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    losses = []
    t_compile = time.perf_counter()
    for it in range(cfg.max_iters):
        if it == warmup:
            sync()
            t0 = time.perf_counter()
            warm_s = t0 - t_compile
        for group in optimizer.param_groups:
            group["lr"] = lr_at(it, cfg)
        x, y = get_batch(train_ids, cfg.batch_size, model.cfg.block_size, rng, device)
        optimizer.zero_grad(set_to_none=True)
        loss = step(x, y)
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        optimizer.step()
        losses.append(loss.item() if sync_each_step else loss.detach().clone())
    sync()
    ms = (time.perf_counter() - t0) / iters * 1000
    losses = [float(v) for v in losses]
    return {"variant": variant, "ms_per_iter": round(ms, 2), "warmup_s": round(warm_s, 1),
            "loss_last50": round(float(np.mean(losses[-50:])), 4)}


VARIANTS = ("plain-fp32", "ours-bf16", "ours-bf16-nosync", "ours-bf16-unfused", "ours-bf16-unfused-nosync",
            "ours-bf16-compile", "ours-bf16-unfused-compile-nosync", "ours-bf16-unfused-compile-graphs-nosync",
            "plain-fp32-again")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "data" / "tinyshakespeare.txt")
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--device", default="cuda", help="cpu: a dry run of this script")
    args = p.parse_args()
    from bench.gpu_check import corpus_ids, importable_wheels

    importable_wheels()
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA GPU here", file=sys.stderr)
        return 2
    train_ids, _ = corpus_ids(args.corpus)
    rows = []
    for variant in args.variants.split(","):
        try:
            rows.append(run(variant.replace("-again", ""), args.iters, args.warmup, train_ids, args.device) | {"variant": variant})
        except Exception as e:  # one variant's failure (a compiler's, say) is a finding, not the end of the run
            rows.append({"variant": variant, "error": f"{type(e).__name__}: {str(e)[:300]}"})
        print(json.dumps(rows[-1]), flush=True)
    base = [r["ms_per_iter"] for r in rows if r["variant"].startswith("plain-fp32") and "ms_per_iter" in r]
    base_ms = min(base) if base else float("nan")
    name = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    print(f"\ntorch {torch.__version__}, {name}, {args.iters} timed iterations after "
          f"{args.warmup}\n\n| variant | ms/iter | / plain fp32 | loss, last 50 | warm-up s |\n|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['variant']} | failed: {r['error'][:120]} | | | |")
        else:
            print(f"| {r['variant']} | {r['ms_per_iter']} | {r['ms_per_iter'] / base_ms:.2f} | {r['loss_last50']} "
                  f"| {r['warmup_s']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
