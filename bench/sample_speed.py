"""Sampling speed: PA6a's loop, which unembeds every position of the context, vs `GPT.generate`, which unembeds
only the last one. Same model, same seed, the default sampling options (5 samples of 100 tokens, temperature
0.7, top-k 200).

    .venv/bin/python bench/sample_speed.py [--checkpoint models/lm-<key>/ckpt.pt] [--repeat 3] [--threads 2]

The model is the default run's trained LM when there is one (the newest models/lm-*/ckpt.pt), else the PA6a
config freshly initialised: the time does not depend on the weights, but whether both loops draw the same tokens
is best seen on a trained model's peaked distributions. Writes bench/out/sample_speed.md."""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from common import ROOT, cpu_name, write_report


def full_context(model, idx, max_new_tokens: int, temperature: float, top_k: int, generator):
    """PA6a's sampling loop, the baseline: the whole context's logits, of which the last row is used."""
    import torch
    import torch.nn.functional as F

    from pipeline.lm.model import GPT2_VOCAB

    for _ in range(max_new_tokens):
        logits, _ = model(idx[:, -model.cfg.block_size:])
        logits = logits[:, -1, :GPT2_VOCAB].float() / temperature
        kth = torch.topk(logits, min(top_k, logits.size(-1))).values[:, [-1]]
        probs = F.softmax(logits.masked_fill(logits < kth, float("-inf")), dim=-1)
        idx = torch.cat((idx, torch.multinomial(probs, num_samples=1, generator=generator)), dim=1)
    return idx


def main() -> None:
    import numpy as np
    import torch

    from pipeline.lm import tokenizer
    from pipeline.lm.config import GPTConfig, SampleConfig
    from pipeline.lm.model import GPT
    from pipeline.lm.trainer import load_model

    p = argparse.ArgumentParser()
    p.add_argument("--checkpoint")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    found = sorted((ROOT / "models").glob("lm-*/ckpt.pt"), key=lambda f: f.stat().st_mtime)
    checkpoint = Path(args.checkpoint) if args.checkpoint else (found[-1] if found else None)
    if checkpoint:
        model = load_model(checkpoint)
        checkpoint = str(checkpoint.resolve().relative_to(ROOT) if checkpoint.resolve().is_relative_to(ROOT)
                         else checkpoint)
    else:
        torch.manual_seed(0)
        model = GPT(GPTConfig()).eval()
    s = SampleConfig()
    start = torch.tensor([tokenizer.encode(s.start)])

    def draw(loop) -> tuple[float, list[list[int]]]:
        gen = torch.Generator().manual_seed(s.seed)
        t0 = time.perf_counter()
        with torch.no_grad():
            out = [loop(model, start, s.max_new_tokens, s.temperature, s.top_k, gen)[0].tolist()
                   for _ in range(s.num_samples)]
        return time.perf_counter() - t0, out

    loops = {"baseline": full_context,
             "ours": lambda m, idx, n, temperature, top_k, generator: m.generate(idx, n, temperature, top_k, generator)}
    times: dict[str, list[float]] = {name: [] for name in loops}
    tokens = {}
    for _ in range(args.repeat):  # interleaved, so that a busy minute costs both alike
        for name, loop in loops.items():
            seconds, tokens[name] = draw(loop)
            times[name].append(seconds)
    base, ours = (float(np.median(times[k])) for k in ("baseline", "ours"))
    same = sum(a == b for a, b in zip(tokens["baseline"], tokens["ours"]))
    n_tokens = s.num_samples * s.max_new_tokens
    lines = [f"# Sampling speed, {s.num_samples} samples of {s.max_new_tokens} tokens, {args.threads} threads",
             "", f"CPU: {cpu_name()}. Model: {checkpoint or 'PA6a config, untrained'}. Median of {args.repeat}.", "",
             "| loop | s | tokens per s | × baseline time |", "|---|---|---|---|",
             f"| PA6a's, the whole context unembedded (baseline) | {base:.2f} | {n_tokens / base:.0f} | 1.00 |",
             f"| ours, `GPT.generate`: the last position only | {ours:.2f} | {n_tokens / ours:.0f} | {ours / base:.2f} |",
             "", f"Samples with the same tokens in both loops: {same}/{s.num_samples}."]
    write_report("sample_speed", lines, {"baseline_s": times["baseline"], "ours_s": times["ours"],
                                         "same_samples": same, "checkpoint": checkpoint, "cpu": cpu_name()})


if __name__ == "__main__":
    main()
