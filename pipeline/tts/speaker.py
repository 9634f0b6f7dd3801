"""The synthesis worker: one voice, loaded once from its resolved Source, speaking each sentence alone; its
result per sentence is a `Spoken` (pipeline/exec/workers.py says what every worker shares)."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from pipeline.core.records import Status
from pipeline.core.source import Source
from pipeline.exec.workers import Done, transient, unloadable, where
from pipeline.tts import base as tts


@dataclass(kw_only=True, slots=True)
class Spoken(Done):
    tts_seconds: float = 0.0  # wall time of synthesis
    audio_seconds: float = 0.0
    samples: np.ndarray | None = transient()  # float32 mono; written to the wav by the stage
    sr: int = transient(0)
    wav_sha256: str | None = None  # of the wav the stage wrote
    wav_bytes: int | None = None


class Speaker:
    """One voice, loaded once from its resolved Source."""

    def __init__(self, source: Source, options: tts.TTSConfig):
        self.voice, self.error, self.failed = None, "", None
        try:
            self.voice = tts.load(source, options)
        except tts.VoiceUnavailable as e:  # a program or package to install: said on its rows; other voices go on
            self.error = str(e)
        except Exception as e:
            self.failed = unloadable(source, e)

    def work(self, texts: list[str]) -> list[Spoken]:
        if self.failed:
            raise self.failed
        return [self.speak(text) for text in texts]

    def speak(self, text: str) -> Spoken:
        if self.voice is None:
            return Spoken(status=Status.ERROR, error=self.error, **where())
        t0 = time.perf_counter()
        try:
            samples, sr = self.voice.synthesize(text)
        except tts.UnspeakableText as e:
            return Spoken(status=Status.SKIPPED, error=str(e), **where())
        except Exception as e:  # one bad sentence must not stop the others
            return Spoken(status=Status.ERROR, error=f"{type(e).__name__}: {e}", **where())
        if not np.isfinite(samples).all():
            return Spoken(status=Status.ERROR, error=f"{self.voice.name} made non-finite samples (NaN or Inf)", **where())
        return Spoken(status=Status.OK, samples=np.asarray(samples, dtype=np.float32), sr=sr,
                      tts_seconds=round(time.perf_counter() - t0, 4), audio_seconds=round(len(samples) / sr, 4),
                      **where())
