"""scripts/setup compiles numba's kernels once per install (scripts/precompile), so that no run compiles them in
the middle of a stage: after it, a speed condition, speaker_sim's measure and scoring, as a run calls them, compile
nothing."""
import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.slow  # compiles librosa's kernels into an empty cache: about 20 s

FIRST_USE = """
from pipeline.measures import base
from pipeline.scoring.align import INTERPRETED_CELLS, align
from pipeline.io import audio, conditions
from pipeline.tts import base as tts

speech = audio.resample(*tts.load("piper:joe").synthesize("Now is the winter of our discontent."))
assert len(conditions.change_speed(speech, 16000, 1.25)) == round(len(speech) / 1.25)
measure = base.MEASURES.get("speaker_sim")
scores = measure.load(measure.source()).score(speech, speaker_reference=speech)
assert scores.values["speaker_sim"] > 0.99, scores
words = int(INTERPRETED_CELLS ** 0.5) + 1  # a corpus large enough for the compiled aligner
assert align(["a", "b"] * words, ["a"] * words).deletions == words
"""


def test_after_setup_a_run_compiles_no_kernel(tmp_path):
    cache = tmp_path / "numba"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    subprocess.run([sys.executable, "scripts/precompile"], cwd=ROOT, env=env, check=True)
    compiled = {p.relative_to(cache): p.read_bytes() for p in cache.rglob("*") if p.is_file()}
    assert sum(p.suffix == ".nbc" for p in compiled) >= 12  # librosa's twelve and the aligner
    subprocess.run([sys.executable, "-c", FIRST_USE], cwd=ROOT, env=env, check=True)
    after = {p.relative_to(cache): p.read_bytes() for p in cache.rglob("*") if p.is_file()}
    assert after == compiled  # every kernel the run used was loaded from the cache, none compiled or added
