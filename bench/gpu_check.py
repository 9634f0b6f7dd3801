"""The GPU check: one script, at most about 5 minutes on one GPU.

    scripts/gpu_wheels                                   # here, once: the pure-Python wheels the GPU machine lacks
    python bench/gpu_check.py [--iters 200]              # there (the device tool: carry bench/wheels)

It needs only torch, numpy and tiktoken on the machine; openai-whisper and tqdm come as wheels in bench/wheels/
(openai-whisper imports numba only for word timestamps, which nothing here uses: a stand-in is registered when
numba is absent). Whisper's real weights cannot travel, so Whisper's code path runs on a small randomly
initialised model (ModelDimensions) on the same audio on both devices.

1. Trains the PA6a config for --iters iterations on CUDA and on the CPU from the same seed and batches, and
   compares the loss curves (mean of the last 50 iterations).
2. Samples and scores perplexity on CUDA.
3. Decodes the same audio greedily with openai-whisper's code on CUDA (float32, and float16 as the pipeline uses)
   and on the CPU, then scores the CPU's tokens, teacher-forced, on both devices: the logits should agree within
   WHISPER_TOLERANCE of their spread. Equal tokens are reported, not required: a random model's near ties may
   part two decodes whose every logit agrees to rounding.
4. Times training on the device as the pipeline trains there (`trainer.training_step`: on CUDA, bf16 autocast
   where supported and the step captured as CUDA graphs) against plain eager fp32 PA6a code on the same device,
   same seed and batches, after 30 warm-up iterations: the ratio and both loss curves' tails.
5. Prints a timing table: ms per training iteration, audio seconds decoded per second."""
from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
import time
import types
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WHEELS = ROOT / "bench" / "wheels"
# Largest logit difference from the CPU's fp32 logits, as a share of their standard deviation. A wrong kernel or an
# input on the wrong device is off by the whole spread; cuDNN's convolutions may run in TF32 (10-bit mantissa)
# even in fp32, and float16 keeps 11 bits.
WHISPER_TOLERANCE = {"fp32": 1e-2, "fp16": 5e-2}
sys.path.insert(0, str(ROOT))  # run as a script on a machine where the pipeline is not installed


def importable_wheels() -> None:
    """Unpack the carried wheels onto sys.path (no pip, no network), and stand in for numba if it is absent."""
    if WHEELS.is_dir():
        target = Path(tempfile.mkdtemp(prefix="wheels-"))
        for wheel in sorted(WHEELS.glob("*.whl")):
            zipfile.ZipFile(wheel).extractall(target)
        sys.path.insert(0, str(target))
    try:
        import numba  # noqa: F401
    except ImportError:
        stub = types.ModuleType("numba")
        stub.jit = lambda *a, **k: (a[0] if a and callable(a[0]) else (lambda f: f))
        stub.njit = stub.jit
        sys.modules["numba"] = stub


def corpus_ids(path: Path):
    import numpy as np

    from pipeline.lm import tokenizer

    text = path.read_text() if path.exists() else ("First Citizen: Before we proceed any further, hear me speak. " * 2000)
    ids = np.array(tokenizer.encode(text), dtype=np.int64)
    cut = int(len(ids) * 0.9)
    return ids[:cut], ids[cut:]


def train_curve(device: str, iters: int, train_ids, val_ids, precision: str = "fp32",
                plain: bool = False, warmup: int = 30) -> tuple[list[float], float]:
    """The pipeline's training step (CUDA graphs on a GPU) or, `plain`, PA6a's own code (unfused loss, AdamW's
    default kernel, fp32, eager); ms per iteration after `warmup` iterations, which pay for compiling."""
    import numpy as np
    import torch

    from pipeline.lm.config import GPTConfig, TrainConfig
    from pipeline.lm.model import GPT
    from pipeline.lm.trainer import get_batch, lr_at, make_optimizer, training_step

    cfg = TrainConfig(max_iters=iters, precision=precision)
    torch.manual_seed(cfg.seed)
    model = GPT(GPTConfig()).to(device)
    optimizer = make_optimizer(model, cfg, fused=not plain)
    step = training_step(model, precision, device)
    rng = np.random.default_rng(cfg.seed)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    losses = []
    warmup = min(warmup, iters - 1)
    for it in range(iters):
        if it == warmup:
            sync()
            t0 = time.perf_counter()
        for group in optimizer.param_groups:
            group["lr"] = lr_at(it, cfg)
        x, y = get_batch(train_ids, cfg.batch_size, model.cfg.block_size, rng, device)
        optimizer.zero_grad(set_to_none=True)
        if plain:
            _, loss = model(x, y, fused_loss=False)
            loss.backward()
        else:
            loss = step(x, y)
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        optimizer.step()
        losses.append(loss.detach())  # read at the end: a host sync per step is not PA6a's either
    sync()
    ms = (time.perf_counter() - t0) / (iters - warmup) * 1000
    return [float(v) for v in losses], ms, model


def pipeline_train(device: str, iters: int, train_ids, val_ids, precision: str) -> dict:
    """The pipeline's own `train()` on the device, with two evaluations: its log holds every step's loss (read
    from the device at evaluations) and a checkpoint that loads."""
    import numpy as np

    from pipeline.core import store
    from pipeline.lm.config import GPTConfig, TrainConfig
    from pipeline.lm.trainer import load_model, train

    out = Path(tempfile.mkdtemp(prefix="gpu-train-"))
    # two evaluations of a few batches: what is checked is the loop's bookkeeping, not the losses' precision
    cfg = TrainConfig(max_iters=iters, eval_interval=max(2, iters // 2), eval_iters=4, precision=precision)
    summary = train(train_ids, val_ids, GPTConfig(), cfg, out, progress=False, device=device)
    rows = store.read_csv(out / "loss_log.csv")
    losses = [float(r["loss"]) for r in rows if r["loss"]]
    load_model(out / "ckpt.pt", device)
    return {"final_val": summary["final_val"], "rows": len(rows), "rows_with_loss": len(losses),
            "ok": len(rows) == len(losses) == iters and bool(np.isfinite(losses).all())}


def random_whisper():
    """A small Whisper with random weights, the same in every call: whisper leaves the decoder's positional
    embedding uninitialised (torch.empty, filled by a checkpoint), so without a fill two builds of the "same" model
    differ, and a comparison of devices compares whatever memory each build got."""
    import torch
    import whisper

    torch.manual_seed(0)
    dims = whisper.model.ModelDimensions(n_mels=80, n_audio_ctx=1500, n_audio_state=256, n_audio_head=4,
                                         n_audio_layer=2, n_vocab=51864, n_text_ctx=448, n_text_state=256,
                                         n_text_head=4, n_text_layer=2)
    model = whisper.model.Whisper(dims).eval()
    torch.nn.init.normal_(model.decoder.positional_embedding, std=0.02)
    return model


def whisper_tokens(model, device: str, fp16: bool, audio) -> tuple[list[list[int]], float]:
    """Greedy decodes with openai-whisper's decoding loop, and their seconds."""
    import torch
    import whisper

    options = whisper.DecodingOptions(language="en", without_timestamps=True, fp16=fp16, sample_len=24)
    out, t0 = [], time.perf_counter()
    for a in audio:
        mel = whisper.log_mel_spectrogram(whisper.pad_or_trim(torch.from_numpy(a).to(device)))
        with torch.inference_mode():
            out.append(whisper.decode(model, mel, options).tokens)
    return out, time.perf_counter() - t0


def whisper_logits(model, device: str, fp16: bool, audio, tokens: list[list[int]]) -> list:
    """Each utterance's decoder logits over the start sequence and the given tokens, teacher-forced, in fp32 on the
    CPU: both devices score the same sequence, so one near tie cannot send their decodes apart."""
    import torch
    import whisper

    tokenizer = whisper.tokenizer.get_tokenizer(model.is_multilingual, num_languages=model.num_languages,
                                                language="en", task="transcribe")  # as whisper.decode gets it
    start = list(tokenizer.sot_sequence_including_notimestamps)
    out = []
    with torch.inference_mode():
        for a, toks in zip(audio, tokens):
            mel = whisper.log_mel_spectrogram(whisper.pad_or_trim(torch.from_numpy(a).to(device)))[None]
            features = model.embed_audio(mel.half() if fp16 else mel)
            ids = torch.tensor([start + toks], device=device)
            out.append(model.logits(ids, features)[0].float().cpu())
    return out


def logits_agreement(reference: list, other: list, tolerance: float) -> dict:
    """The largest logit difference against the reference's spread. Where a position's two best tokens are more than
    twice that difference apart its argmax cannot differ, so the share of such positions is reported too."""
    import torch

    diff = max(float((o - r).abs().max()) for r, o in zip(reference, other))
    spread = float(torch.cat(reference).std())
    top2 = torch.cat(reference).topk(2, dim=-1).values
    decisive = float(((top2[:, 0] - top2[:, 1]) > 2 * diff).float().mean())
    same = float(torch.cat([(o.argmax(-1) == r.argmax(-1)) for r, o in zip(reference, other)]).float().mean())
    return {"max_abs_diff": diff, "relative": diff / spread, "tolerance": tolerance, "ok": diff / spread <= tolerance,
            "argmax_equal": same, "positions_whose_margin_exceeds_the_diff": decisive}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--utterances", type=int, default=8)
    p.add_argument("--device", default="cuda", help="the device under test (cpu: a dry run of this script)")
    p.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "data" / "tinyshakespeare.txt",
                   help="the training text (a repeated line where it is absent); ../shared does not travel to a "
                        "GPU machine, so copy it into bench/wheels/ and name it here")
    args = p.parse_args()
    importable_wheels()
    import numpy as np
    import torch

    dev = args.device
    if dev == "cuda" and not torch.cuda.is_available():
        print("no CUDA GPU here: run with --device cpu for a dry run", file=sys.stderr)
        return 2
    print(f"torch {torch.__version__}, device {dev}"
          + (f" ({torch.cuda.get_device_name()})" if dev == "cuda" else ""), flush=True)
    train_ids, val_ids = corpus_ids(args.corpus)
    print(f"corpus: {args.corpus if args.corpus.exists() else 'absent, a repeated line'}", flush=True)
    report = {}
    curve_dev, ms_dev, model = train_curve(dev, args.iters, train_ids, val_ids)
    curve_cpu, ms_cpu, _ = train_curve("cpu", args.iters, train_ids, val_ids)
    tail = min(50, args.iters)
    report["loss_last50"] = {dev: float(np.mean(curve_dev[-tail:])), "cpu": float(np.mean(curve_cpu[-tail:]))}
    report["loss_curves_agree"] = abs(report["loss_last50"][dev] - report["loss_last50"]["cpu"]) <= 0.02

    precision = "bf16" if dev == "cuda" and torch.cuda.is_bf16_supported() else "fp32"
    curve_ours, ms_ours, _ = train_curve(dev, args.iters, train_ids, val_ids, precision)
    curve_plain, ms_plain, _ = train_curve(dev, args.iters, train_ids, val_ids, plain=True)
    report["train_ratio"] = {"precision": precision, "ours_ms": round(ms_ours, 2), "plain_fp32_ms": round(ms_plain, 2),
                             "ratio": round(ms_ours / ms_plain, 3), "goal": "<= 0.333",
                             "goal_met": ms_ours / ms_plain <= 1 / 3,
                             "loss_last50_ours": float(np.mean(curve_ours[-tail:])),
                             "loss_last50_plain": float(np.mean(curve_plain[-tail:]))}
    report["train_ratio"]["loss_within_0.03"] = abs(report["train_ratio"]["loss_last50_ours"]
                                                    - report["train_ratio"]["loss_last50_plain"]) <= 0.03

    report["pipeline_train"] = pipeline_train(dev, args.iters, train_ids, val_ids, precision)

    from pipeline.lm import tokenizer
    from pipeline.lm.config import SampleConfig
    from pipeline.lm.perplexity import perplexity
    from pipeline.lm.sampler import generate

    model.eval()
    samples = generate(model, SampleConfig(num_samples=2, max_new_tokens=40))
    report["samples"] = samples
    report["perplexity"] = [perplexity(model, tokenizer.encode(s)) for s in samples]

    rng = np.random.default_rng(0)
    audio = [(0.1 * rng.standard_normal(16000 * (2 + k % 4))).astype(np.float32) for k in range(args.utterances)]
    seconds = sum(len(a) for a in audio) / 16000
    cpu_model = random_whisper()
    dev_model = copy.deepcopy(cpu_model).to(dev)
    cpu_tokens, cpu_s = whisper_tokens(cpu_model, "cpu", False, audio)
    dev_tokens, dev_s = whisper_tokens(dev_model, dev, False, audio)
    half_tokens, half_s = whisper_tokens(dev_model, dev, dev == "cuda", audio)
    reference = whisper_logits(cpu_model, "cpu", False, audio, cpu_tokens)
    report["whisper_fp32_logits"] = logits_agreement(reference, whisper_logits(dev_model, dev, False, audio, cpu_tokens),
                                                     WHISPER_TOLERANCE["fp32"])
    report["whisper_fp16_logits"] = logits_agreement(
        reference, whisper_logits(dev_model, dev, dev == "cuda", audio, cpu_tokens), WHISPER_TOLERANCE["fp16"])
    report["whisper_fp32_tokens_equal"] = dev_tokens == cpu_tokens
    report["whisper_fp16_tokens_equal"] = half_tokens == cpu_tokens
    rows = [("train ms/iter (PA6a config, fp32)", f"{ms_cpu:.1f}", f"{ms_dev:.1f}"),
            (f"train ms/iter, ours ({precision}) / plain eager fp32", "",
             f"{ms_ours:.1f} / {ms_plain:.1f} = {ms_ours / ms_plain:.2f}"),
            ("whisper code path, audio s per s (fp32)", f"{seconds / cpu_s:.1f}", f"{seconds / dev_s:.1f}"),
            ("whisper code path, audio s per s (fp16 on GPU)", "", f"{seconds / half_s:.1f}")]
    print(f"\n| measure | cpu | {dev} |\n|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} |")
    print(f"\nGoal: training <= 1/3 of plain eager fp32's time on {dev}: "
          f"{'met' if report['train_ratio']['goal_met'] else 'not met'}, {ms_ours / ms_plain:.2f}")
    print(json.dumps(report, indent=1))
    ok = report["loss_curves_agree"] and report["pipeline_train"]["ok"] and report["whisper_fp32_logits"]["ok"] and report["whisper_fp16_logits"]["ok"]
    print("GPU CHECK", "PASSED" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
