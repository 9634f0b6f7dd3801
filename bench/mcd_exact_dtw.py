"""How far MCD-DTW as pymcd computes it (fastdtw, radius 1: pipeline/measures/mcd.py) stands from MCD on the exact
DTW path over the same features, on every ordered pair of four bundled voices saying the same lines:

    python bench/mcd_exact_dtw.py [--lines 4]

Not a timing: the figure docs/statistics.md gives for how the recipe differs from exact-DTW MCD."""
from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from pathlib import Path

import numpy as np

from common import ROOT, cpu_name, shakespeare_lines, write_report

sys.path.insert(0, str(ROOT))
VOICES = ("piper:joe", "espeak:en-us", "flite:slt", "flite:awb")


def exact_path(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The optimal DTW path (steps (1,1), (1,0), (0,1); Euclidean cost), as fastdtw approximates it."""
    import numba

    @numba.njit(cache=False)
    def costs(a, b):
        n, m = len(a), len(b)
        d = np.full((n + 1, m + 1), np.inf)
        d[0, 0] = 0.0
        for i in range(1, n + 1):
            for j in range(1, m + 1):
                d[i, j] = np.sqrt(((a[i - 1] - b[j - 1]) ** 2).sum()) + min(d[i - 1, j], d[i, j - 1], d[i - 1, j - 1])
        return d

    d, (i, j), path = costs(a, b), (len(a), len(b)), []
    while i > 0 and j > 0:
        path.append((i - 1, j - 1))
        step = int(np.argmin([d[i - 1, j - 1], d[i - 1, j], d[i, j - 1]]))
        i, j = (i - 1, j - 1) if step == 0 else (i - 1, j) if step == 1 else (i, j - 1)
    return np.array(path[::-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=4)
    args = parser.parse_args()
    from pipeline.io import audio
    from pipeline.measures import mcd
    from pipeline.stages.assess import load
    from pipeline.tts import base as tts

    lines = shakespeare_lines(args.lines, 6, 14)
    folder = Path(tempfile.mkdtemp())
    clips = {}
    for name in VOICES:
        voice = tts.load(name)
        for i, line in enumerate(lines):
            samples, sr = voice.synthesize(line)
            clips[name, i] = folder / f"{name.replace(':', '-')}-{i}.wav"
            audio.write_wav(clips[name, i], samples, sr)
    relative = []
    for natural, made in itertools.permutations(VOICES, 2):
        for i in range(len(lines)):
            a = mcd.aligned(load(str(clips[made, i]), mcd.RATE), load(str(clips[natural, i]), mcd.RATE))
            path = exact_path(a.natural_mcep[:, 1:], a.mcep[:, 1:])
            z = a.natural_mcep[path[:, 0]] - a.mcep[path[:, 1]]
            exact = mcd.DB * np.sqrt((z * z).sum(-1)).sum() / len(path)
            relative.append((a.mcd() - exact) / exact)
    r = np.array(relative)
    report = ["# MCD-DTW (fastdtw, as pymcd) against exact-DTW MCD on the same features", "",
              f"CPU: {cpu_name()} (not a timing)", "",
              f"{len(r)} ordered pairs of {len(VOICES)} voices saying {len(lines)} lines: fastdtw's MCD minus the "
              f"exact path's, relative: mean {r.mean():+.1%}, median {np.median(r):+.1%}, "
              f"from {r.min():+.1%} to {r.max():+.1%}"]
    write_report("mcd_exact_dtw", report, {"relative": [round(float(x), 5) for x in r]})


if __name__ == "__main__":
    main()
