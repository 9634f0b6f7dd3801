"""The measures' cost per utterance, against the reference libraries on the same clips, in one run:

    python bench/measures_speed.py [--clips 24]

- DNSMOS: speechmos's own `dnsmos.run(x, 16000)` (one clip per call, onnxruntime on every core, as users call
  it) against ours (pipeline/measures/dnsmos.py): one clip per call on one thread, and the assess stage's way,
  one clip per core. The largest difference of any value is printed: the goal is ≥ 3× at 1e-4.
- speaker_sim: Resemblyzer's embed_utterance(preprocess_wav(x, 16000)), as the measure calls it.
- Distill-MOS: the distillmos package's own `ConvTransformerSQAModel` forward, one clip per call on every core, as
  its users call it, against ours (pipeline/measures/distill_mos.py) in the assess stage, a clip per core.
- The transcribe stage's engine on the same clips (faster-whisper base int8, one utterance per core), since all
  measures together should take no longer than transcription.
Clips are the bundled Piper voice speaking Shakespeare lines of 4-30 words."""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from common import ROOT, cpu_name, shakespeare_lines, write_report

sys.path.insert(0, str(ROOT))
from tests.helpers import distillmos_reference  # noqa: E402 (the tests' reference: the package's own model)


def clips(n: int) -> list[np.ndarray]:
    from pipeline.io import audio
    from pipeline.tts import base

    voice = base.load("piper:joe")
    out = []
    for line in shakespeare_lines(n, 4, 30):
        samples, sr = voice.synthesize(line)
        out.append(audio.resample(samples, sr))
    return out


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clips", type=int, default=24)
    args = parser.parse_args()
    import speechmos.dnsmos as reference

    from pipeline.asr import base as asr
    from pipeline.asr.transcriber import Transcriber
    from pipeline.measures.assessor import Assessor, Clip
    from pipeline.measures import base

    xs = clips(args.clips)
    seconds = sum(len(x) for x in xs) / 16000
    peaks = [x / np.abs(x).max() for x in xs]
    theirs: list[dict] = []
    reference.run(peaks[0], 16000)  # its sessions load on the first call
    t_ref = timed(lambda: theirs.extend(reference.run(x, 16000) for x in peaks))
    loads: dict[str, float] = {}

    def loaded(name: str, threads: int = 0) -> Assessor:
        """The measure's worker made and its first clip scored, timed: what a run pays once before its clips."""
        declared = base.MEASURES.get(name)
        started = time.perf_counter()
        worker = Assessor(name, declared.source(), threads)
        worker.work([Clip(xs[0], dict.fromkeys(declared.needs))])
        loads[name] = time.perf_counter() - started
        return worker

    dnsmos = loaded("dnsmos", 1)
    ours = []
    t_one = timed(lambda: ours.extend(dnsmos.measure.score(x) for x in xs))
    dnsmos.threads = 0 or min(__import__("os").cpu_count() or 1, 8)
    t_par = timed(lambda: dnsmos.work([Clip(x) for x in xs]))
    worst = max(abs(float(t[f"{k.split('_')[1]}_mos"]) - o.values[k]) for t, o in zip(theirs, ours) for k in o.values)
    sim = loaded("speaker_sim")
    t_sim = timed(lambda: sim.work([Clip(x, {"speaker_reference": None}) for x in xs]))
    package, torch = distillmos_reference(), __import__("torch")
    torch.set_num_threads(os.cpu_count() or 1)  # the package's own call, as its users call it: every core
    package(xs[0])
    distill_theirs: list[float] = []
    t_dm_ref = timed(lambda: distill_theirs.extend(package(x) for x in xs))
    distill = loaded("distill_mos")  # one thread a clip from here on
    distill_ours: list = []
    t_dm = timed(lambda: distill_ours.extend(distill.work([Clip(x) for x in xs])))
    dm_worst = max(abs(d.scores.values["distill_mos"] - t) for d, t in zip(distill_ours, distill_theirs))
    options = asr.ASRConfig()
    listener = Transcriber(asr.resolve("faster-whisper:base", options, str(ROOT / "models")), options,
                        str(ROOT / "models"))
    listener.work(xs[:1])
    t_asr = timed(lambda: listener.work(xs))
    n = len(xs)
    lines = [f"# Measures: cost per utterance ({n} Piper clips, {seconds / n:.1f} s each on average)", "",
             f"CPU: {cpu_name()}", "",
             "| what | s per clip | vs speechmos |", "|---|---|---|",
             f"| speechmos `dnsmos.run` (its threads) | {t_ref / n:.3f} | 1.00× |",
             f"| ours, one clip per call, one thread | {t_one / n:.3f} | {t_ref / t_one:.2f}× |",
             f"| ours, the assess stage (a clip per core) | {t_par / n:.3f} | {t_ref / t_par:.2f}× |",
             f"| speaker_sim (Resemblyzer), a clip per core | {t_sim / n:.3f} | |",
             f"| distillmos's own `ConvTransformerSQAModel` forward (its threads) | {t_dm_ref / n:.3f} | |",
             f"| distill_mos, the assess stage (a clip per core) | {t_dm / n:.3f} | "
             f"{t_dm_ref / t_dm:.2f}× distillmos |",
             f"| all measures (assess) | {(t_par + t_sim + t_dm) / n:.3f} | |",
             f"| transcribe: faster-whisper base int8, a clip per core | {t_asr / n:.3f} | |", "",
             "Each measure's load and first clip, paid once a run: " +
             ", ".join(f"{name} {s:.2f} s" for name, s in loads.items()) + ".",
             f"Largest difference from speechmos in any value: {worst:.2e} (goal ≤ 1e-4); from distillmos: "
             f"{dm_worst:.2e} (goal ≤ 1e-4). distill_mos at least as fast as distillmos's call: "
             f"{'met' if t_dm <= t_dm_ref else 'not met'} ({t_dm_ref / t_dm:.2f}×).",
             f"Goal ≥ 3× speechmos per clip: {'met' if t_ref / t_par >= 3 else 'not met'} "
             f"({t_ref / t_par:.2f}× in the stage, {t_ref / t_one:.2f}× on one thread).",
             f"Goal: all measures no slower than transcription: "
             f"{'met' if t_par + t_sim + t_dm <= t_asr else 'not met'} ({t_par + t_sim + t_dm:.1f} s vs {t_asr:.1f} s)."]
    write_report("measures_speed", lines, {"clips": n, "audio_s": seconds, "speechmos_s": t_ref, "ours_one_s": t_one,
                                           "ours_stage_s": t_par, "speaker_sim_s": t_sim, "transcribe_s": t_asr,
                                           "max_abs_diff": worst, "distillmos_s": t_dm_ref, "distill_mos_s": t_dm,
                                           "distill_mos_max_abs_diff": dm_worst, "load_s": loads, "cpu": cpu_name()})


if __name__ == "__main__":
    main()
