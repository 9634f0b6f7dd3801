"""Transcription throughput and TTS speed on the same Piper speech, Whisper base, greedy, 2 threads.

    .venv/bin/python bench/asr_speed.py [--sentences 32] [--model base]

Baseline: openai-whisper's own transcribe(), one utterance at a time, as a user would call it.
Each variant loads its model once, in its own subprocess (for a clean peak RSS), then transcribes every
utterance `--repeat` times; the fastest run counts (this shared machine's timings vary by ±20%), and load time
is reported apart. Writes bench/out/asr_speed.{json,md}."""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from common import ROOT, shakespeare_lines, write_report

MODELS = ROOT / "models"
# "ours" is the pipeline's recognizer as the pipeline runs it: every utterance decoded alone in its own window,
# `--threads` utterances at a time, each on one thread.
VARIANTS = ["openai-whisper transcribe()", "openai-whisper ours", "faster-whisper transcribe() int8",
            "faster-whisper ours float32", "faster-whisper ours int8"]


def run_variant(name: str, model: str, audio_file: str, threads: int, repeat: int) -> dict:
    import torch

    from pipeline.asr import base

    torch.set_num_threads(threads)
    data = np.load(audio_file)
    arrays = [data[k] for k in sorted(data.files)]
    t0 = time.perf_counter()
    if name == "openai-whisper transcribe()":  # as a user calls it: one model, all threads on each utterance
        import whisper

        from pipeline.asr import weights

        ckpt = torch.load(weights.openai_checkpoint(model, MODELS), map_location="cpu", weights_only=True)
        w = whisper.model.Whisper(whisper.model.ModelDimensions(**ckpt["dims"]))
        w.load_state_dict(ckpt["model_state_dict"])
        w.eval()

        def transcribe():
            return [w.transcribe(a, language="en", temperature=0.0, fp16=False, verbose=None,
                                 condition_on_previous_text=False)["text"].strip() for a in arrays]
    elif name == "faster-whisper transcribe() int8":
        from faster_whisper import WhisperModel

        from pipeline.asr import weights

        fw = WhisperModel(str(weights.ct2_dir(model, MODELS)), device="cpu", compute_type="int8",
                          cpu_threads=threads)

        def transcribe():
            return [" ".join(s.text.strip() for s in fw.transcribe(
                a, language="en", beam_size=1, temperature=0.0, condition_on_previous_text=False)[0]).strip()
                for a in arrays]
    else:
        engine = "openai-whisper" if name.startswith("openai") else "faster-whisper"
        compute = "float32" if "float32" in name else "int8"
        r = base.load(f"{engine}:{model}", base.ASRConfig(threads=threads, compute_type=compute), str(MODELS))

        def transcribe():
            return [t for t, _ in r.transcribe(arrays)]
    load = time.perf_counter() - t0
    walls = []
    for _ in range(repeat):  # best of `repeat`: the least disturbed run
        t0 = time.perf_counter()
        texts = transcribe()
        walls.append(time.perf_counter() - t0)
    return {"variant": name, "load_s": load, "wall_s": min(walls), "walls": walls, "texts": texts,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sentences", type=int, default=32)
    p.add_argument("--model", default="base")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=2, help="runs per variant; the fastest counts")
    p.add_argument("--variant")
    p.add_argument("--audio")
    args = p.parse_args()
    if args.variant:
        print(json.dumps(run_variant(args.variant, args.model, args.audio, args.threads, args.repeat)))
        return
    from pipeline import audio
    from pipeline.scoring.align import align_text
    from pipeline.scoring.normalize import get
    from pipeline.tts import base as tts

    texts = shakespeare_lines(args.sentences, 6, 20)
    voice = tts.load("piper:joe")
    arrays, tts_wall, spoken = {}, 0.0, 0.0
    for i, text in enumerate(texts):
        t0 = time.perf_counter()
        samples, sr = voice.synthesize(text)
        tts_wall += time.perf_counter() - t0
        spoken += len(samples) / sr
        arrays[f"{i:04d}"] = audio.resample(samples, sr)
    tmp = Path(tempfile.mkdtemp()) / "speech.npz"
    np.savez(tmp, **arrays)
    print(f"piper:joe: {spoken:.1f} s of speech in {tts_wall:.1f} s, RTF {tts_wall / spoken:.3f}", flush=True)
    norm = get("basic")
    results = []
    for v in VARIANTS:
        out = subprocess.run([sys.executable, __file__, "--variant", v, "--model", args.model, "--audio", str(tmp),
                              "--threads", str(args.threads), "--repeat", str(args.repeat)], capture_output=True,
                             text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        errors = sum(align_text(norm(t), norm(h)).errors for t, h in zip(texts, r["texts"]))
        r["wer"] = errors / sum(len(norm(t).split()) for t in texts)
        r["throughput"] = spoken / r["wall_s"]
        results.append(r)
        print(f"{v:>34}: {r['throughput']:.1f} audio s / s, WER {r['wer']:.3f}, RSS {r['peak_rss_mb']:.0f} MB", flush=True)
    base = results[0]
    lines = [f"# Transcription throughput, Whisper {args.model}, greedy, {args.threads} threads, "
             f"{len(texts)} Piper utterances ({spoken:.0f} s of speech), best of {args.repeat} runs", "",
             f"TTS piper:joe: RTF {tts_wall / spoken:.3f} ({tts_wall:.1f} s wall for {spoken:.1f} s of audio).", "",
             "| variant | audio s per wall s | × openai-whisper transcribe() | WER | transcripts equal to baseline | "
             "load s | peak RSS MB |", "|---|---|---|---|---|---|---|"]
    for r in results:
        same = sum(a == b for a, b in zip(r["texts"], base["texts"]))
        lines.append(f"| {r['variant']} | {r['throughput']:.1f} | {r['throughput'] / base['throughput']:.2f} | "
                     f"{r['wer']:.3f} | {same}/{len(texts)} | {r['load_s']:.1f} | {r['peak_rss_mb']:.0f} |")
    write_report("asr_speed", lines, {"tts_rtf": tts_wall / spoken, "speech_s": spoken, "sentences": texts,
                                      "results": results})


if __name__ == "__main__":
    main()
