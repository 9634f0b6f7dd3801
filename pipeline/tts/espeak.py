"""eSpeak NG voices (Debian `espeak-ng`), named by espeak's voice code: espeak:en-us, espeak:en-gb, ..."""
from __future__ import annotations

import shutil

import numpy as np

from pipeline.tts import base
from pipeline.tts.command import run_to_wav

HINT = "apt-get install espeak-ng (scripts/setup does this)"


class EspeakVoice:
    def __init__(self, voice: str, options: dict):
        if shutil.which("espeak-ng") is None:
            raise base.VoiceUnavailable(f"espeak:{voice} needs the espeak-ng program: {HINT}")
        self.name = f"espeak:{voice}"
        self.voice = voice

    def files(self) -> list[str]:
        return [shutil.which("espeak-ng")]

    def synthesize(self, text: str) -> tuple[np.ndarray, int]:
        text = base.speakable(text)
        return run_to_wav(lambda t, w: ["espeak-ng", "-v", self.voice, "-f", str(t), "-w", str(w)],
                          text, "espeak-ng", HINT)


base.register("espeak", EspeakVoice)
