"""The transcription worker: one ASR engine, loaded once from its resolved Source; its result per utterance is a
`Heard` (pipeline/exec/workers.py says what every worker shares)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.asr import base as asr
from pipeline.core.source import Source
from pipeline.exec.workers import Done, one_blas_thread, unloadable, where


@dataclass(kw_only=True, slots=True)
class Heard(Done):
    hypothesis: str = ""
    asr_seconds: float | None = None  # wall time of this utterance's decode
    mode: str = ""  # how the engine decoded it: window or long-form
    audio_sha256: str = ""  # of the audio heard, its level and length: filled in by the stage that read it
    level_dbfs: float | None = None
    audio_seconds: float | None = None


class Listener:
    """One ASR engine, loaded once from its resolved Source."""

    def __init__(self, source: Source, options: asr.ASRConfig, models_dir: str, device: str = "cpu"):
        self.recognizer, self.failed = None, None
        one_blas_thread()
        try:
            self.recognizer = asr.load(source, options, models_dir, device)
        except Exception as e:
            self.failed = unloadable(source, e)

    def work(self, arrays: list[np.ndarray]) -> list[Heard]:
        if self.failed:
            raise self.failed
        return [Heard(status="ok", hypothesis=d.text, asr_seconds=round(d.seconds, 4), mode=d.mode, **where())
                for d in self.recognizer.transcribe(arrays)]
