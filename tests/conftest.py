import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory) -> Path:
    """One models/ for the whole session, so Whisper weights are assembled and converted once."""
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def piper_speech():
    """Three short utterances spoken by the default voice, at 16 kHz."""
    from pipeline.io import audio
    from pipeline.tts import base

    voice = base.load("piper:joe")
    texts = ["Now is the winter of our discontent made glorious summer by this sun of York.",
             "To be, or not to be, that is the question.",
             "My lord, I will go with you to the king tomorrow."]
    out = []
    for t in texts:
        samples, sr = voice.synthesize(t)
        out.append(audio.resample(samples, sr))
    return texts, out


def pytest_configure(config):
    os.environ.setdefault("TQDM_DISABLE", "1")
    # Four workers share two cores (pyproject.toml). An OpenMP thread that spins while it waits for work (the GNU
    # OpenMP that torch and CTranslate2 each bundle) then holds a core another worker's run needs: the LM's sampling
    # took 17.6 s beside two other runs, and 4.9 s with waiting threads asleep. How a thread waits changes no
    # arithmetic.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


# The files whose tests take the longest, in the order the workers start them (bench/suite_cpu.py's wall times on
# two cores). A worker takes the next file as it runs out, so a long file started last would set the suite's end
# alone. The listening team's first builder (test_listen_server.py) starts before the other modules that wait for
# it. A file that mostly waits (test_interrupts.py: 210 s for 34 CPU-s) starts early, where the others' work fills
# its waits, and not last, where the machine would idle with it. pyproject.toml turns off pytest-xdist's own order
# (by number of tests), which this replaces.
LONGEST_FIRST = ("test_ray.py", "test_listen_server.py", "test_invariance.py", "test_pipeline.py",
                 "test_interrupts.py", "test_listen.py", "test_listen_typed.py", "test_measures.py",
                 "test_recovery.py", "test_damage.py", "test_distill_mos.py", "test_compare_runs.py",
                 "test_manifests.py", "test_gate.py", "test_report.py", "test_model_sources.py")


def pytest_collection_modifyitems(config, items):
    place = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: place.get(item.path.name, len(LONGEST_FIRST)))  # stable: the rest as collected
