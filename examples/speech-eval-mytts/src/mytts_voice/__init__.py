"""mytts: an example TTS system as a speech-eval voice plugin. Two speakers, both Piper's joe model driven through
piper's Python API: `speaker1` as is, `slow` at 0.8× speed."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from pipeline.tts import base, piper

SPEAKERS = {"speaker1": 1.0, "slow": 1.25}  # Piper's length_scale: how long each phoneme lasts


def resolve(spec: str, options: base.TTSConfig, models_dir: str):
    """Where the model is: the files whose content determines the audio, hashed into every cache key."""
    return replace(piper.resolve("piper:joe", options, models_dir), spec=spec)


class MyTTS:
    def __init__(self, source, options: base.TTSConfig):
        from piper import PiperVoice
        from piper.config import SynthesisConfig

        self.name = source.spec
        self.voice = PiperVoice.load(source.files[0], source.files[1])
        self.config = SynthesisConfig(length_scale=SPEAKERS[source.name], noise_scale=0.0, noise_w_scale=0.0)

    def synthesize(self, text: str) -> tuple[np.ndarray, int]:
        text = base.speakable(text)  # empty or punctuation-only text: a clear per-row error, not a crash
        pieces = [chunk.audio_float_array for chunk in self.voice.synthesize(text, syn_config=self.config)]
        rate = self.voice.config.sample_rate
        return (np.concatenate(pieces) if pieces else np.zeros(0, np.float32)), rate


base.VOICES.register("mytts", MyTTS, resolve=resolve, names=tuple(SPEAKERS))
