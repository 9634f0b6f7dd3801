"""faster-whisper with the encoder window trimmed to the speech: `faster-whisper-trim:base`.

Whisper encodes every utterance in a 30 s window, which for a 3 s line is mostly padding, and on a CPU the
encoder takes about 80% of a decode (bench/asr_speed.py profiles it). This variant encodes
max(10 s, length + 4 s) instead, as whisper.cpp's audio-context option does. The window follows from the
utterance's own length alone, so the transcript still depends on nothing else.

Whisper was trained on 30 s windows only. In a window that ends soon after the speech it can repeat the line
until max_length (measured on 64 Piper lines: 9 looped with 1-2 s of margin, none with the rule above), so a
transcript that compresses like a loop (zlib ratio over openai-whisper's own threshold, 2.4) is decoded again
in the full window. Its transcripts differ from the full window's on about half the lines, at a WER the README
reports beside its speed."""
from __future__ import annotations

import math
import zlib

import numpy as np

from pipeline.asr import base, sources
from pipeline.asr.faster_whisper import FasterWhisper
from pipeline.io.audio import N_SAMPLES, SAMPLE_RATE

MIN_WINDOW_S = 10
MARGIN_S = 4
LOOP_COMPRESSION_RATIO = 2.4


def window_samples(n_samples: int) -> int:
    """The trimmed window for audio of n_samples: whole seconds, at least MARGIN_S past the speech."""
    seconds = max(MIN_WINDOW_S, math.ceil(n_samples / SAMPLE_RATE) + MARGIN_S)
    return min(N_SAMPLES, seconds * SAMPLE_RATE)


def looks_like_a_loop(text: str) -> bool:
    data = text.encode()
    return bool(data) and len(data) / len(zlib.compress(data)) > LOOP_COMPRESSION_RATIO


class TrimmedFasterWhisper(FasterWhisper):
    def _short(self, audio: np.ndarray) -> str:
        window = window_samples(len(audio))
        if window < N_SAMPLES:
            text = self.decode_features(self.features(audio, window))
            if not looks_like_a_loop(text):
                return text
        return super()._short(audio)


base.ENGINES.register("faster-whisper-trim", TrimmedFasterWhisper, model_family="whisper",
                      check=lambda name: sources.check_name("faster-whisper", name), resolve=sources.faster_whisper,
                      revision=lambda options: base.FEATURES_ON_ONE_THREAD)
