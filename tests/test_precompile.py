"""scripts/setup compiles numba's kernels and the project's modules once per install (scripts/precompile), so that no
run compiles them in the middle of a stage or at each start: after it, a speed condition, speaker_sim's measure and
scoring, as a run calls them, compile nothing, even where Python writes no bytecode of its own."""
import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.slow  # compiles librosa's kernels into an empty cache: about 20 s

FIRST_USE = """
import importlib._bootstrap_external as loading
import sys

compiled = []
from_source = loading.SourceLoader.source_to_code
def compiling(loader, data, path, **options):
    compiled.append(path)
    return from_source(loader, data, path, **options)
loading.SourceLoader.source_to_code = compiling

from pipeline.measures import base
from pipeline.scoring import alternations
from pipeline.scoring.align import INTERPRETED_CELLS, SUBSTITUTION, align
from pipeline.io import audio, conditions
from pipeline.tts import base as tts

speech = audio.resample(*tts.load("piper:joe").synthesize("Now is the winter of our discontent."))
assert len(conditions.change_speed(speech, 16000, 1.25)) == round(len(speech) / 1.25)
measure = base.MEASURES.get("speaker_sim")
scores = measure.load(measure.source()).score(speech, speaker_reference=speech)
assert scores.values["speaker_sim"] > 0.99, scores
words = int(INTERPRETED_CELLS ** 0.5) + 1  # a corpus large enough for the compiled aligner
assert align(["a", "b"] * words, ["a"] * words).deletions == words
assert alternations.align([[["a"], ["b"]]] * words, [[["c"]]] * words)[2] == bytes([SUBSTITUTION]) * words
ours = {m.__file__ for name, m in sys.modules.items() if name.split(".")[0] == "pipeline"}
assert len(ours) > 20 and not ours.intersection(compiled), compiled
"""


def test_after_setup_a_run_compiles_no_kernel_and_none_of_our_modules(tmp_path):
    cache = tmp_path / "numba"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONDONTWRITEBYTECODE": "1"}
    subprocess.run([sys.executable, "scripts/precompile"], cwd=ROOT, env=env, check=True)
    compiled = {p.relative_to(cache): p.read_bytes() for p in cache.rglob("*") if p.is_file()}
    assert sum(p.suffix == ".nbc" for p in compiled) >= 14  # librosa's twelve and the two aligners
    subprocess.run([sys.executable, "-c", FIRST_USE], cwd=ROOT, env=env, check=True)
    after = {p.relative_to(cache): p.read_bytes() for p in cache.rglob("*") if p.is_file()}
    assert after == compiled  # every kernel the run used was loaded from the cache, none compiled or added
