"""The transcription worker: one ASR engine, loaded once from its resolved Source; its result per utterance is a
`Heard` (pipeline/exec/workers.py says what every worker shares). A `Transcript` is a speech row as one engine
heard it: the transcribe stage's rows."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.asr import base as asr
from pipeline.core.records import SPOKEN, Grouped, SpeechRow, Status, one_of, utterance_id
from pipeline.core.source import Source
from pipeline.exec.workers import Done, one_blas_thread, unloadable, where


@dataclass(frozen=True, slots=True, kw_only=True)
class Transcript(Grouped, SpeechRow):
    sentence_id: str
    voice: str
    condition: str
    asr: str  # engine:model
    audio_path: str
    audio_seconds: float | None  # length of the audio heard
    tts_seconds: float | None
    hypothesis: str  # what the engine wrote, as written
    asr_seconds: float | None  # wall time of this utterance's decode
    status: str
    error: str
    audio_sha256: str  # of the audio heard: the transcript's cache key starts from it
    level_dbfs: float | None  # loudest 30 ms frame of the audio heard

    def __post_init__(self):
        one_of(self.status, SPOKEN, "status")

    @property
    def id(self) -> str:
        return utterance_id(sentence_id=self.sentence_id, voice=self.voice, condition=self.condition, asr=self.asr)


@dataclass(kw_only=True, slots=True)
class Heard(Done):
    hypothesis: str = ""
    asr_seconds: float | None = None  # wall time of this utterance's decode
    mode: str = ""  # how the engine decoded it: window or long-form
    audio_sha256: str = ""  # of the audio heard, its level and length: filled in by the stage that read it
    level_dbfs: float | None = None
    audio_seconds: float | None = None


class Transcriber:
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
        return [Heard(status=Status.OK, hypothesis=d.text, asr_seconds=round(d.seconds, 4), mode=d.mode, **where())
                for d in self.recognizer.transcribe(arrays)]
