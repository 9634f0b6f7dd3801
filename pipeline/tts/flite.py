"""CMU flite voices (Debian `flite`): slt, awb, rms, kal. Cheap, distinct, robotic."""
from __future__ import annotations

import shutil

import numpy as np

from pipeline.config import ConfigError
from pipeline.tts import base
from pipeline.tts.command import run_to_wav

VOICES = ("slt", "awb", "rms", "kal")
HINT = "apt-get install flite (scripts/setup does this)"


class FliteVoice:
    def __init__(self, voice: str, options: dict):
        if shutil.which("flite") is None:
            raise base.VoiceUnavailable(f"flite:{voice} needs the flite program: {HINT}")
        self.name = f"flite:{voice}"
        self.voice = voice

    def files(self) -> list[str]:
        return [shutil.which("flite")]

    def synthesize(self, text: str) -> tuple[np.ndarray, int]:
        text = base.speakable(text)
        return run_to_wav(lambda t, w: ["flite", "-voice", self.voice, "-f", str(t), "-o", str(w)],
                          text, "flite", HINT)


def check(voice: str) -> None:
    if voice not in VOICES:
        raise ConfigError(f"speech.voices: flite:{voice} is unknown; available: "
                          + ", ".join(f"flite:{v}" for v in VOICES))


base.register("flite", FliteVoice, check)
