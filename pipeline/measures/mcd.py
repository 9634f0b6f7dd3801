"""Mel-cepstral distortion against a natural recording of the same sentence, with dynamic time warping, as PyPI
`pymcd` 0.2.1's `Calculate_MCD("dtw")` computes it: the implementation TTS papers reporting "MCD (DTW)" most often
run, its numbers equal to it (tests/test_natural.py).

Both recordings at 22,050 Hz (as librosa.load resamples); WORLD (pyworld's `wav2world`: DIO and StoneMask F0,
CheapTrick envelope, a 5 ms frame, FFT 512) then SPTK's `mcep` (order 13, α 0.65) on each; fastdtw (radius 1) on
the coefficients c1…c13 by Euclidean distance; the MCD is 10/ln 10 · √2 times the mean, over the path's pairs, of
the distance over c0…c13. So, as pymcd does and unlike the textbook definition:
- c0, the frame's energy, is in the distance though not in the alignment: a louder or quieter copy scores worse;
- fastdtw approximates the optimal path over c1…c13 (exact DTW finds one of lower or equal cost), so its MCD is
  not exact-DTW MCD: docs/manifests.md gives how far apart the two are on this tool's clips;
- the mean is over the path's pairs, not the natural recording's frames, and silence is kept.
Lower is better; values compare only with other MCD-DTW of this recipe (pymcd's), on the same natural recordings.

`aligned()` is the alignment f0_rmse reads too, so both measures see the same frame pairs."""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

import numpy as np

from pipeline.core.source import ModelDamaged, Source
from pipeline.measures.base import MEASURES, NATURAL, Declaration, Scores

RATE = 22050
FRAME_PERIOD_MS = 5.0
FFT_SIZE = 512
ORDER = 13
ALPHA = 0.65  # the all-pass constant for 22,050 Hz
DB = 10.0 / math.log(10.0) * math.sqrt(2.0)
MIN_SECONDS = 0.1  # less audio than this has too few frames to align
PACKAGES = ("pyworld", "pysptk", "fastdtw")
FIX = "run scripts/setup --test, or .venv/bin/pip install -e '.[natural]'"
NO_NATURAL = ("no natural recording of this sentence (a manifest's natural column, a seed-tts gt_wav, or an "
              "LJSpeech folder with --audio-dir)")


def packages():
    """pyworld, pysptk and fastdtw; the first two import pkg_resources (setuptools < 81), which says it is
    deprecated on every import."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        import fastdtw
        import pysptk
        import pyworld
    return pyworld, pysptk, fastdtw


def installed() -> bool:
    return all(find_spec(p) is not None for p in PACKAGES)


def source(name: str = "mcd") -> Source:
    """The compiled WORLD and SPTK and fastdtw's code: the files that determine the values."""
    try:
        modules = packages()
    except ImportError as e:
        raise ModelDamaged(f"{name} needs the PyPI packages {', '.join(PACKAGES)} ({e}); {FIX}") from None
    files = sorted(str(f) for m in modules for f in Path(m.__file__).parent.iterdir()
                   if f.suffix in (".so", ".pyd", ".py"))
    return Source(spec=f"{name}:world-sptk-fastdtw", found="package", path=str(Path(modules[0].__file__).parent),
                  files=tuple(files), repo=", ".join(PACKAGES))


@dataclass(frozen=True)
class Alignment:
    """Two recordings' WORLD frames and the fastdtw path between them (natural first)."""
    natural_f0: np.ndarray  # Hz, 0 where unvoiced
    f0: np.ndarray
    natural_mcep: np.ndarray  # frames × (ORDER + 1)
    mcep: np.ndarray
    path: tuple[np.ndarray, np.ndarray]  # frame indices: natural, the utterance's

    def mcd(self) -> float:
        z = self.natural_mcep[self.path[0]] - self.mcep[self.path[1]]
        return float(DB * np.sqrt((z * z).sum(-1)).sum() / len(self.path[0]))


def features(audio: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    pyworld, pysptk, _ = packages()
    f0, sp, _ = pyworld.wav2world(audio.astype(np.float64), fs=RATE, frame_period=FRAME_PERIOD_MS,
                                  fft_size=FFT_SIZE)
    mcep = pysptk.sptk.mcep(sp, order=ORDER, alpha=ALPHA, maxiter=0, etype=1, eps=1.0e-8, min_det=0.0, itype=3)
    return f0, mcep


def aligned(audio: np.ndarray, natural: np.ndarray) -> Alignment:
    from scipy.spatial.distance import euclidean

    _, _, fastdtw = packages()
    natural_f0, natural_mcep = features(natural)
    f0, mcep = features(audio)
    _, path = fastdtw.fastdtw(natural_mcep[:, 1:], mcep[:, 1:], dist=euclidean)
    pairs = np.asarray(path, dtype=np.int64).reshape(-1, 2)
    return Alignment(natural_f0, f0, natural_mcep, mcep, (pairs[:, 0], pairs[:, 1]))


def unusable(audio: np.ndarray, natural: np.ndarray | None) -> str:
    """Why this pair cannot be aligned, or ""."""
    if natural is None:
        return NO_NATURAL
    for what, x in (("the audio", audio), ("the natural recording", natural)):
        if len(x) < MIN_SECONDS * RATE or not np.any(x):
            return f"{what} is silent or under {MIN_SECONDS:g} s: nothing to align"
    return ""


class MelCepstralDistortion:
    def __init__(self, source: Source):
        packages()

    def score(self, audio: np.ndarray, natural: np.ndarray | None) -> Scores:
        why = unusable(audio, natural)
        if why:
            return Scores({"mcd": None}, (why,))
        return Scores({"mcd": round(aligned(audio, natural).mcd(), 4)})


MEASURES.register(Declaration(
    name="mcd",
    columns={"mcd": "mel-cepstral distortion (dB) from the natural recording of the sentence, fastdtw-aligned, as "
                    "pymcd 0.2.1's MCD-DTW; empty without a natural recording"},
    source=source, load=MelCepstralDistortion, needs=(NATURAL,), rate=RATE, installed=installed,
    paper="Kubichek, Mel-cepstral distance measure for objective speech quality assessment, 1993; computed as PyPI "
          "pymcd 0.2.1's Calculate_MCD('dtw')",
    better="lower",
    comparable="MCD-DTW of pymcd 0.2.1 (c0 included, fastdtw radius 1, 22,050 Hz, α 0.65, order 13) on the same "
               "natural recordings only",
    predicts=""))
