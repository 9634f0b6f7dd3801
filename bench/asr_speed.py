"""Transcription throughput and TTS speed on the same Piper speech, Whisper base, greedy, 2 threads.

    .venv/bin/python bench/asr_speed.py [--sentences 32] [--model base]

Baseline: openai-whisper's own transcribe(), one utterance at a time, as a user would call it (glibc's malloc as it
comes; the pipeline's engines, loaded through pipeline.asr.base.load, tune it: pipeline/exec/malloc.py).
The variants run in `--repeat` rounds, each round every variant once, in turn, each in its own subprocess (for a
clean peak RSS) that loads its model and transcribes every utterance. The fastest round counts, and load time is
reported apart. This shared machine's rate drifts by a third over minutes, so interleaving lets the drift fall on
every variant alike, where running each variant's repeats back to back gave the last variants another machine
than the baseline; each round's ratio to the baseline of the same round is shown too, and whether a variant's
transcripts were the same in every round. The goal (≥ 3× the baseline in the median of those paired ratios, WER
inside the baseline's 95% bootstrap CI over sentences) is checked for each variant; the bfloat16 ones are timed
only on a CPU with native bf16 (elsewhere, their WER only).
A profile on one thread then splits a decode into features, encoder and decoder, for the full 30 s window and
the trimmed one (faster-whisper int8), and for openai-whisper's full window (float32, and bfloat16 where native),
and sets each encoder's rate against this CPU's matmul peak for its dtype.
Last, CTranslate2's own CPU settings, each in a fresh process (they are read once, at its first use): the GEMM
backend (`CT2_USE_MKL=1`: Intel MKL, `=0`: oneDNN) and the instruction set (`CT2_FORCE_CPU_ISA`, each this CPU
has), in int8 and float32, one thread, full window, on the first `--ct2-sentences` utterances, with what CT2
chose by itself and whether the transcripts equal its default's. `--part variants|profile|ct2` runs one part.
Writes bench/out/asr_speed.{json,md}."""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from common import ROOT, cpu_flags, cpu_name, native_bf16, shakespeare_lines, write_report

MODELS = ROOT / "models"
# "ours" is the pipeline's recognizer as the pipeline runs it: every utterance decoded alone in its own window,
# `--threads` utterances at a time, each on one thread.
# "faster-whisper-trim" is the same with the encoder window trimmed to the speech (pipeline/asr/faster_whisper_trim.py).
# The peers, each on its own defaults, as a user would pick it instead: openai-whisper's transcribe(),
# faster-whisper's transcribe() (int8) and whisper.cpp through pywhispercpp (f16 ggml, converted by
# pipeline/asr/_ggml.py from the same weights, temperature fallback and timestamps as it comes).
PEERS = ["openai-whisper transcribe()", "faster-whisper transcribe() int8", "whisper.cpp transcribe()"]
VARIANTS = [*PEERS, "openai-whisper ours", "faster-whisper ours float32", "faster-whisper ours int8",
            "faster-whisper-trim ours int8", "whisper-cpp ours"]
TRIMMED = {"faster-whisper-trim ours int8"}  # not a full-window engine: left out of the race
# bf16 (--compute-type bfloat16), with its fp32 counterpart: timed only where the CPU has native bf16. Elsewhere
# torch's bf16 kernels run 4-6× slower than fp32 (convolutions and matmuls widened in software) but compute what
# bf16 computes, so the variant runs once for its WER and its time is left out. CTranslate2 has no bf16 on any
# CPU (only on CUDA, compute capability ≥ 8), so faster-whisper has no bf16 variant here.
BF16_VARIANTS = {"openai-whisper ours bfloat16": "openai-whisper ours"}
ENCODER_DIMS = {"base": (512, 6), "tiny.en": (384, 4)}  # width, layers
GOAL = 3.0
# (/proc/cpuinfo flag, CT2_FORCE_CPU_ISA value): the instruction sets CTranslate2 dispatches to on x86
CT2_ISAS = [(None, "GENERIC"), ("avx", "AVX"), ("avx2", "AVX2"), ("avx512f", "AVX512")]


def encoder_gflop(model: str, frames: int) -> float:
    """Matmul FLOPs of Whisper's encoder over `frames` log-mel frames (two convolutions, then the layers)."""
    d, layers = ENCODER_DIMS[model]
    t = frames // 2
    convs = 2 * frames * d * 80 * 3 + 2 * t * d * d * 3
    return (convs + layers * (24 * t * d * d + 4 * t * t * d)) / 1e9


def run_profile(model: str, audio_file: str) -> dict:
    """One thread, one utterance at a time: where a decode's time goes, full window against trimmed."""
    import torch

    from pipeline.asr import base
    from pipeline.asr.faster_whisper_trim import window_samples
    from pipeline.exec.device import matmul_gflops
    from pipeline.io.audio import HOP_LENGTH, N_SAMPLES

    torch.set_num_threads(1)
    def one_thread_peak(dtype: str) -> float:
        return matmul_gflops(dtype, size=1024, seconds=2.0)

    fp32_before = one_thread_peak("fp32")
    r = base.load(f"faster-whisper:{model}", base.ASRConfig(threads=1), str(MODELS))
    data = np.load(audio_file)
    arrays = [data[k] for k in sorted(data.files)]
    out = {"load_wav": load_seconds(arrays)}
    for window in ("full", "trimmed"):
        parts = {"features": 0.0, "encoder": 0.0, "decoder": 0.0}
        gflop = 0.0
        for a in arrays:
            samples = N_SAMPLES if window == "full" else window_samples(len(a))
            t0 = time.perf_counter()
            feats = r.features(a, samples)
            t1 = time.perf_counter()
            encoded = r.model.model.encode(r._storage(np.ascontiguousarray(feats[None])), to_cpu=False)
            t2 = time.perf_counter()
            r.model.model.generate(encoded, [r.prompt], beam_size=1, max_length=448, suppress_blank=True,
                                   suppress_tokens=[-1])
            t3 = time.perf_counter()
            parts["features"] += t1 - t0
            parts["encoder"] += t2 - t1
            parts["decoder"] += t3 - t2
            gflop += encoder_gflop(model, samples // HOP_LENGTH)
        out[window] = {**{k: v / len(arrays) for k, v in parts.items()}, "encoder_gflops": gflop / parts["encoder"],
                       "encoder_gflop_per_utterance": gflop / len(arrays)}
    out["openai-whisper"] = {"float32": openai_whisper_split(model, arrays, bf16=False)}
    out["whisper.cpp"] = whisper_cpp_split(model, arrays)
    # This shared machine's rate drifts by a third from minute to minute: each peak is the best of a measurement
    # before the decodes and one after.
    if native_bf16():  # elsewhere bf16 runs in software, and its split would say nothing of bf16's speed
        bf16_before = one_thread_peak("bf16")
        out["openai-whisper"]["bfloat16"] = openai_whisper_split(model, arrays, bf16=True)
        out["bf16_peak_1_thread"] = max(bf16_before, one_thread_peak("bf16"))
    out["fp32_peak_1_thread"] = max(fp32_before, one_thread_peak("fp32"))
    return out


def whisper_cpp_split(model: str, arrays: list[np.ndarray]) -> dict:
    """One thread, full window: seconds per utterance of our whisper-cpp decode: its log-mel, its encoder (on the
    full 1500-frame context), and the rest of the decode, from a whole decode's time less those two."""
    import _pywhispercpp as pw

    from pipeline.asr import base

    engine = base.load(f"whisper-cpp:{model}", base.ASRConfig(threads=1), str(MODELS))
    context = engine.contexts[0]
    parts = {"features": 0.0, "encoder": 0.0, "decoder": 0.0}
    for a in arrays:
        t0 = time.perf_counter()
        pw.whisper_pcm_to_mel(context._ctx, a, len(a), 1)
        t1 = time.perf_counter()
        pw.whisper_encode(context._ctx, 0, 1)
        t2 = time.perf_counter()
        engine._decode(context, a, False)
        whole = time.perf_counter() - t2
        parts["features"] += t1 - t0
        parts["encoder"] += t2 - t1
        parts["decoder"] += max(0.0, whole - (t2 - t0))
    gflop = encoder_gflop(model, 3000)
    return {**{k: v / len(arrays) for k, v in parts.items()}, "encoder_gflop_per_utterance": gflop,
            "encoder_gflops": gflop * len(arrays) / parts["encoder"]}


def openai_whisper_split(model: str, arrays: list[np.ndarray], bf16: bool) -> dict:
    """One thread, full window: seconds per utterance of the pipeline's openai-whisper decode (greedy, as
    pipeline/asr/openai_whisper.py runs it, bf16 with its weights cast once), split into features, encoder and
    decoder. whisper.decode takes encoded features and then skips its encoder."""
    import torch
    import whisper

    from pipeline.asr.openai_whisper import bf16_weights
    from pipeline.io.audio import HOP_LENGTH, N_SAMPLES

    torch.set_num_threads(1)
    w = openai_whisper_model(model)
    if bf16:
        bf16_weights(w)
    options = whisper.DecodingOptions(language="en", without_timestamps=True, fp16=False, temperature=0.0)
    parts = {"features": 0.0, "encoder": 0.0, "decoder": 0.0}
    for a in arrays:
        with torch.inference_mode():
            t0 = time.perf_counter()
            mel = whisper.log_mel_spectrogram(whisper.pad_or_trim(torch.from_numpy(a)), w.dims.n_mels)
            t1 = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):  # the features stay fp32, as there
                features = w.embed_audio(mel[None])
                t2 = time.perf_counter()
                whisper.decode(w, features, options)
                t3 = time.perf_counter()
        parts["features"] += t1 - t0
        parts["encoder"] += t2 - t1
        parts["decoder"] += t3 - t2
    gflop = encoder_gflop(model, N_SAMPLES // HOP_LENGTH)
    return {**{k: v / len(arrays) for k, v in parts.items()}, "encoder_gflop_per_utterance": gflop,
            "encoder_gflops": gflop * len(arrays) / parts["encoder"]}


def openai_whisper_model(model: str):
    """openai-whisper's own model class on the bundled weights, as a user would load it."""
    import torch
    import whisper

    from pipeline.asr import weights

    ckpt = torch.load(weights.openai_checkpoint(weights.ct2_dir(model, MODELS), MODELS), map_location="cpu",
                      weights_only=True)
    w = whisper.model.Whisper(whisper.model.ModelDimensions(**ckpt["dims"]))
    w.load_state_dict(ckpt["model_state_dict"])
    return w.eval()


def run_bf16_step(model: str, tokens: int = 20) -> dict:
    """One thread: ms per decoding step of openai-whisper's decoder under bf16 autocast, with its modules as
    whisper writes them (every weight cast at every step, SDPA's attention) and as the pipeline decodes
    (pipeline/asr/openai_whisper.py's bf16_weights: weights cast and packed once at load, the cross-attention's
    keys prepared once per decode, a step in one TorchScript call), on the same random audio features with the
    key-value cache."""
    import copy

    import torch

    from pipeline.asr.openai_whisper import bf16_weights

    torch.set_num_threads(1)
    theirs = openai_whisper_model(model)
    ours = copy.deepcopy(theirs)
    bf16_weights(ours)
    torch.manual_seed(0)
    xa = torch.randn(1, theirs.dims.n_audio_ctx, theirs.dims.n_audio_state)
    out = {}
    for name, m in (("whisper_modules", theirs), ("bf16_weights", ours)) * 2:  # best of two, interleaved
        cache, hooks = m.install_kv_cache_hooks()
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
            m.decoder(torch.tensor([[50257, 50362]]), xa, kv_cache=cache)  # the prompt, and the cross-attention keys
            t0 = time.perf_counter()
            for i in range(tokens):
                m.decoder(torch.tensor([[100 + i]]), xa, kv_cache=cache)
            ms = 1000 * (time.perf_counter() - t0) / tokens
        for h in hooks:
            h.remove()
        out[name] = min(ms, out.get(name, ms))
    return out


def run_ct2_setting(model: str, audio_file: str, compute: str, n: int) -> dict:
    """One thread, full window: the pipeline's faster-whisper on the first n utterances, under whatever CT2_*
    settings this process was started with."""
    from pipeline.asr import base

    data = np.load(audio_file)
    arrays = [data[k] for k in sorted(data.files)][:n]
    r = base.load(f"faster-whisper:{model}", base.ASRConfig(threads=1, compute_type=compute), str(MODELS))
    r.transcribe(arrays[:1])  # warm-up: CT2 picks its kernels at first use
    t0 = time.perf_counter()
    texts = [d.text for d in r.transcribe(arrays)]
    return {"ms_per_utterance": 1000 * (time.perf_counter() - t0) / len(arrays), "texts": texts}


def ct2_settings() -> list[dict[str, str]]:
    """CTranslate2's default, then each GEMM backend, then each instruction set this CPU has."""
    flags = cpu_flags()
    isas = [{"CT2_FORCE_CPU_ISA": isa} for flag, isa in CT2_ISAS if flag is None or flag in flags]
    return [{}, {"CT2_USE_MKL": "1"}, {"CT2_USE_MKL": "0"}, *isas]


def load_seconds(arrays: list[np.ndarray]) -> float:
    """What the transcribe stage does before a decode, per utterance: read the wav, resample it if need be, hash
    it and take its level (pipeline/stages/transcribe.py's heard)."""
    import soundfile as sf

    from pipeline.io.audio import SAMPLE_RATE
    from pipeline.stages.transcribe import heard

    with tempfile.TemporaryDirectory() as folder:
        paths = [f"{folder}/{i}.wav" for i in range(len(arrays))]
        for path, a in zip(paths, arrays):
            sf.write(path, a, SAMPLE_RATE, subtype="PCM_16")
        t0 = time.perf_counter()
        for path in paths:
            heard(path)
        return (time.perf_counter() - t0) / len(paths)


def run_variant(name: str, model: str, audio_file: str, threads: int, repeat: int) -> dict:
    import torch

    from pipeline.asr import base

    torch.set_num_threads(threads)
    data = np.load(audio_file)
    arrays = [data[k] for k in sorted(data.files)]
    t0 = time.perf_counter()
    if name == "openai-whisper transcribe()":  # as a user calls it: one model, all threads on each utterance
        w = openai_whisper_model(model)

        def transcribe():
            return [w.transcribe(a, language="en", temperature=0.0, fp16=False, verbose=None,
                                 condition_on_previous_text=False)["text"].strip() for a in arrays]
    elif name == "whisper.cpp transcribe()":
        from pywhispercpp.model import Model

        from pipeline.asr.whisper_cpp import ggml_file

        source = base.resolve(f"whisper-cpp:{model}", base.ASRConfig(), str(MODELS))
        wc = Model(str(ggml_file(source, str(MODELS))), n_threads=threads, language="en", print_progress=False,
                   redirect_whispercpp_logs_to=None)

        def transcribe():
            return ["".join(s.text for s in wc.transcribe(a)).strip() for a in arrays]
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
        engine = name.split()[0]  # whisper-cpp ours: threads decoders of one thread each, like the others
        compute = next((c for c in ("float32", "bfloat16") if c in name), "int8")
        r = base.load(f"{engine}:{model}", base.ASRConfig(threads=threads, compute_type=compute), str(MODELS))

        def transcribe():
            return [d.text for d in r.transcribe(arrays)]
    load = time.perf_counter() - t0
    walls = []
    for _ in range(repeat):  # best of `repeat`: the least disturbed run
        t0 = time.perf_counter()
        texts = transcribe()
        walls.append(time.perf_counter() - t0)
    return {"variant": name, "load_s": load, "wall_s": min(walls), "walls": walls, "texts": texts,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def race(results: list[dict], ci: tuple[float, float], bf16: bool) -> list[str]:
    """Our fastest full-window engine against the fastest peer, both at a WER inside the baseline's CI."""
    timed = [r for r in results if not r["untimed"] and ci[0] <= r["wer"] <= ci[1]]
    peers = [r for r in timed if r["variant"] in PEERS]
    ours = [r for r in timed if r["variant"] not in PEERS and r["variant"] not in TRIMMED]
    if not peers or not ours:
        return ["", "The race: no peer or none of ours has a WER inside the baseline's CI; nothing to compare."]
    peer, mine = max(peers, key=lambda r: r["throughput"]), max(ours, key=lambda r: r["throughput"])
    lead = mine["throughput"] / peer["throughput"]
    verdict = "met" if lead > 1 else "not met: see the profile below for where each decode's time goes"
    return ["", f"The race on {cpu_name()}{' (native bf16)' if bf16 else ''}: our fastest full-window engine, "
            f"{mine['variant']} ({mine['throughput']:.1f} audio s/s, WER {mine['wer']:.3f}), against the fastest "
            f"peer, {peer['variant']} ({peer['throughput']:.1f}, WER {peer['wer']:.3f}): {lead:.2f}×. Goal (ours "
            f"ahead at a WER in the baseline's CI): {verdict}."]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sentences", type=int, default=32)
    p.add_argument("--model", default="base")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=2, help="rounds, each running every variant once; the fastest counts")
    p.add_argument("--ct2-sentences", type=int, default=8, help="utterances per CTranslate2 setting")
    p.add_argument("--part", choices=("all", "variants", "profile", "ct2"), default="all")
    p.add_argument("--variant")
    p.add_argument("--audio")
    args = p.parse_args()
    if args.variant == "profile":
        print(json.dumps(run_profile(args.model, args.audio)))
        return
    if args.variant == "bf16-step":
        print(json.dumps(run_bf16_step(args.model)))
        return
    if args.variant and args.variant.startswith("ct2:"):
        print(json.dumps(run_ct2_setting(args.model, args.audio, args.variant[4:], args.ct2_sentences)))
        return
    if args.variant:
        print(json.dumps(run_variant(args.variant, args.model, args.audio, args.threads, args.repeat)))
        return
    from pipeline.io import audio
    from pipeline.scoring.align import align_text
    from pipeline.scoring.normalize import get
    from pipeline.scoring.rates import corpus_wer
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
    words = np.array([len(norm(t).split()) for t in texts])  # every line has words: no empty reference

    def subprocess_json(variant: str, repeat: int = args.repeat) -> dict:
        out = subprocess.run([sys.executable, __file__, "--variant", variant, "--model", args.model, "--audio",
                              str(tmp), "--threads", str(args.threads), "--repeat", str(repeat)],
                             capture_output=True, text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    bf16 = native_bf16()
    lines = [f"# Transcription throughput, Whisper {args.model}, greedy, {args.threads} threads, "
             f"{len(texts)} Piper utterances ({spoken:.0f} s of speech), best of {args.repeat} interleaved rounds", "",
             f"CPU: {cpu_name()}.", "",
             f"TTS piper:joe: RTF {tts_wall / spoken:.3f} ({tts_wall:.1f} s wall for {spoken:.1f} s of audio)."]
    data = {"cpu": cpu_name(), "tts_rtf": tts_wall / spoken, "speech_s": spoken, "sentences": texts}
    base = None
    if args.part in ("all", "variants"):
        names = VARIANTS + list(BF16_VARIANTS)
        runs: dict[str, list[dict]] = {v: [] for v in names}
        for round_ in range(args.repeat):  # rounds interleave the variants: the machine's drift falls on all alike
            for v in names:
                if v in BF16_VARIANTS and not bf16 and round_:
                    continue  # its WER only: one run, time left out
                r = subprocess_json(v, repeat=1)
                runs[v].append(r)
                print(f"round {round_ + 1}, {v:>34}: {spoken / r['wall_s']:.1f} audio s / s", flush=True)
        results = []
        for v in names:
            r = dict(runs[v][0])  # transcripts and RSS from the first round; the fastest wall counts
            r["walls"] = [x["wall_s"] for x in runs[v]]
            r["wall_s"], r["load_s"] = min(r["walls"]), min(x["load_s"] for x in runs[v])
            r["peak_rss_mb"] = max(x["peak_rss_mb"] for x in runs[v])
            r["same_every_round"] = all(x["texts"] == r["texts"] for x in runs[v])
            r["untimed"] = v in BF16_VARIANTS and not bf16
            r["errors"] = [align_text(norm(t), norm(h)).errors for t, h in zip(texts, r["texts"])]
            r["wer"] = sum(r["errors"]) / words.sum()
            r["throughput"] = spoken / r["wall_s"]
            results.append(r)
        base = results[0]
        base_wer = corpus_wer(base["errors"], list(words), n_boot=10000)
        ci = (base_wer.ci_low, base_wer.ci_high)
        full = next(r for r in results if r["variant"] == "faster-whisper ours int8")
        lines += ["", f"The baseline's WER {base['wer']:.3f} has a 95% bootstrap CI over sentences of "
                  f"{ci[0]:.3f}-{ci[1]:.3f}.", "",
                  "| variant | audio s per wall s | × openai-whisper transcribe() | × in each round (median) | "
                  f"WER [95% CI] | goal (≥ {GOAL:g}× in the rounds' median, WER in the baseline's CI) | transcripts "
                  "equal to baseline | equal to faster-whisper ours int8 | the same in every round | load s | "
                  "peak RSS MB |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in results:
            same = sum(a == b for a, b in zip(r["texts"], base["texts"]))
            same_full = sum(a == b for a, b in zip(r["texts"], full["texts"]))
            ratio = r["throughput"] / base["throughput"]
            in_ci = ci[0] <= r["wer"] <= ci[1]
            if r["untimed"]:
                speed, ratio_cell, rounds_cell = "not timed, no native bf16", "—", "—"
                met = f"WER {'in' if in_ci else 'outside'} the CI; speed not measured"
            else:
                speed, ratio_cell = f"{r['throughput']:.1f}", f"{ratio:.2f}"
                paired = [b / w for w, b in zip(r["walls"], base["walls"])]  # each against its own round's baseline
                rounds_cell = ", ".join(f"{x:.2f}" for x in paired) + f" ({statistics.median(paired):.2f})"
                met = "—" if r is base else "met" if statistics.median(paired) >= GOAL and in_ci else "not met"
            own = corpus_wer(r["errors"], list(words), n_boot=10000)
            r["wer_ci95"] = (own.ci_low, own.ci_high)
            lines.append(f"| {r['variant']} | {speed} | {ratio_cell} | {rounds_cell} | {r['wer']:.3f} "
                         f"[{own.ci_low:.3f}, {own.ci_high:.3f}] | {met} | "
                         f"{same}/{len(texts)} | {same_full}/{len(texts)} | "
                         f"{'yes' if r['same_every_round'] else 'no'} | {r['load_s']:.1f} | {r['peak_rss_mb']:.0f} |")
        by_name = {r["variant"]: r for r in results}
        for v, fp32 in BF16_VARIANTS.items():
            if v in by_name:
                same = sum(a == b for a, b in zip(by_name[v]["texts"], by_name[fp32]["texts"]))
                lines += ["", f"{v}: {same}/{len(texts)} transcripts equal to {fp32}'s, WER {by_name[v]['wer']:.3f} "
                          f"against {by_name[fp32]['wer']:.3f}."]
        if not bf16:
            lines += ["", "No native bf16 on this CPU (no avx512_bf16 or amx_bf16 in /proc/cpuinfo): the bfloat16 "
                      "variant ran once on torch's software bf16 kernels, which compute what bf16 hardware "
                      "computes, for its WER; its speed is to be measured on a CPU with native bf16."]
        lines += race(results, ci, bf16)
        data.update(baseline_wer_ci95=ci, results=results)
    if args.part in ("all", "profile"):
        prof = subprocess_json("profile")
        n = len(texts)
        lines += ["", f"Profile, one thread, ms per utterance (mean of {n}): faster-whisper:{args.model} int8 in the full "
                  f"and the trimmed window, then openai-whisper:{args.model} as the pipeline runs it; this CPU's fp32 "
                  f"matmul peak on one thread: {prof['fp32_peak_1_thread']:.0f} GFLOP/s:", "",
                  "| window | features | encoder | decoder | encoder GFLOP | encoder GFLOP/s |", "|---|---|---|---|---|---|"]
        for window in ("full", "trimmed"):
            w = prof[window]
            lines.append(f"| {window} | {1000 * w['features']:.0f} | {1000 * w['encoder']:.0f} | "
                         f"{1000 * w['decoder']:.0f} | {w['encoder_gflop_per_utterance']:.1f} | {w['encoder_gflops']:.0f} |")
        for compute, w in prof["openai-whisper"].items():
            peak = prof["bf16_peak_1_thread" if compute == "bfloat16" else "fp32_peak_1_thread"]
            lines.append(f"| full, openai-whisper ours {compute} | {1000 * w['features']:.0f} | {1000 * w['encoder']:.0f} "
                         f"| {1000 * w['decoder']:.0f} | {w['encoder_gflop_per_utterance']:.1f} | "
                         f"{w['encoder_gflops']:.0f} ({w['encoder_gflops'] / peak:.0%} of its dtype's peak) |")
        w = prof["whisper.cpp"]
        lines.append(f"| full, whisper-cpp ours f16 | {1000 * w['features']:.0f} | {1000 * w['encoder']:.0f} | "
                     f"{1000 * w['decoder']:.0f} | {w['encoder_gflop_per_utterance']:.1f} | "
                     f"{w['encoder_gflops']:.0f} ({w['encoder_gflops'] / prof['fp32_peak_1_thread']:.0%} of the fp32 "
                     "peak) |")
        if "bfloat16" not in prof["openai-whisper"]:
            lines += ["", "openai-whisper's bfloat16 split is measured on a CPU with native bf16 only."]
        decode = sum(prof["full"][k] for k in ("features", "encoder", "decoder"))
        lines += ["", f"Loading an utterance's wav before its decode (read, hash, level, as the transcribe stage does): "
                  f"{1000 * prof['load_wav']:.1f} ms, {prof['load_wav'] / decode:.2%} of a full-window decode."]
        cores, enc = args.threads, prof["full"]["encoder_gflop_per_utterance"] * n

        def ceiling(gflops_per_thread: float) -> str:
            rate = spoken / (enc / (cores * gflops_per_thread))
            return f"{rate:.1f} audio s per s" + (f" = {rate / base['throughput']:.2f}× the baseline" if base else "")

        lines += ["", f"Ceiling for a full-window decoder on {cores} threads, from the encoder alone, before a single "
                  f"token is decoded: {ceiling(prof['full']['encoder_gflops'])} at the encoder's measured rate, "
                  f"{ceiling(prof['fp32_peak_1_thread'])} at 100% of the fp32 matmul peak"
                  + (f", {ceiling(prof['bf16_peak_1_thread'])} at 100% of the bf16 matmul peak "
                     f"({prof['bf16_peak_1_thread']:.0f} GFLOP/s on one thread)." if "bf16_peak_1_thread" in prof else ".")]
        step = subprocess_json("bf16-step")
        lines += ["", f"A decoding step of openai-whisper:{args.model} under bf16 autocast, one thread "
                  f"({'native' if bf16 else 'software'} bf16): {step['bf16_weights']:.1f} ms as the pipeline "
                  f"decodes (`--compute-type bfloat16`: weights cast and packed once, the cross-attention's keys "
                  f"prepared once per decode, a step in one TorchScript call), {step['whisper_modules']:.1f} ms "
                  f"with whisper's modules, which cast every weight at every step under inference_mode and attend "
                  f"through SDPA."]
        data["profile"], data["bf16_step_ms"] = prof, step
    if args.part in ("all", "ct2"):
        lines += ct2_table(args, tmp)
    write_report("asr_speed" if args.part == "all" else f"asr_speed_{args.part}", lines, data)


def ct2_table(args, audio_file: Path) -> list[str]:
    """CTranslate2's CPU settings against its own choice, each in a fresh process."""
    n = args.ct2_sentences
    rows, default = [], {}
    for settings in ct2_settings():
        for compute in ("int8", "float32"):
            env = {**os.environ, **settings, "CT2_VERBOSE": "1"}
            out = subprocess.run([sys.executable, __file__, "--variant", f"ct2:{compute}", "--model", args.model,
                                  "--audio", str(audio_file), "--ct2-sentences", str(n)],
                                 capture_output=True, text=True, env=env)
            name = " ".join(f"{k}={v}" for k, v in settings.items()) or "CTranslate2's default"
            if out.returncode:
                rows.append(f"| {name} | {compute} | failed: {(out.stderr.strip().splitlines() or ['?'])[-1][:120]} "
                            "| | | |")
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            chose = dict(re.findall(r" - (Selected ISA|SGEMM backend|GEMM_S8 backend): ([^(\n]+)", out.stderr))
            default.setdefault(compute, r)
            same = sum(a == b for a, b in zip(r["texts"], default[compute]["texts"]))
            rows.append(f"| {name} | {compute} | {chose.get('Selected ISA', '?').strip()}, "
                        f"{chose.get('SGEMM backend', '?').strip()}, {chose.get('GEMM_S8 backend', '?').strip()} | "
                        f"{r['ms_per_utterance']:.0f} | {r['ms_per_utterance'] / default[compute]['ms_per_utterance']:.2f} | "
                        f"{same}/{len(r['texts'])} |")
            print(rows[-1], flush=True)
    return ["", f"CTranslate2's CPU settings, faster-whisper:{args.model}, one thread, full window, the first {n} "
            "utterances, each setting in a fresh process:", "",
            "| setting | compute type | ISA, SGEMM, GEMM_S8 (as CT2 logs them) | ms per utterance | × default's time | "
            "transcripts equal to the default's |", "|---|---|---|---|---|---|", *rows]


if __name__ == "__main__":
    main()
