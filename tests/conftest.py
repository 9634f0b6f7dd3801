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
    # Three workers share two cores (pyproject.toml). An OpenMP thread that spins while it waits for work (the GNU
    # OpenMP that torch and CTranslate2 each bundle) then holds a core another worker's run needs: the LM's sampling
    # took 17.6 s beside two other runs, and 4.9 s with waiting threads asleep. How a thread waits changes no
    # arithmetic.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
