"""The per-item work of synthesis and transcription, as objects that load their model once.

The same classes run in-process (local executor) and as Ray actors (ray executor): a worker never touches the
run directory; it returns a typed result (`Spoken`, `Heard`) per input, and the stage writes files through its per-item
cache."""
from __future__ import annotations

import os
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from typing import Protocol

import numpy as np

from pipeline.asr import base as asr
from pipeline.core.source import Source
from pipeline.errors import WRITE_ERRORS, ModelUnloadable
from pipeline.measures import base as measures
from pipeline.tts import base as tts


def where() -> dict:
    """Which node and process did the work (a Ray node id when inside Ray)."""
    node = socket.gethostname()
    try:
        import ray

        if ray.is_initialized():
            node = ray.get_runtime_context().get_node_id()
    except ImportError:
        pass
    return {"node": node, "pid": os.getpid()}


@dataclass(kw_only=True, slots=True)
class Done:
    """What a worker made of one input, as kept in the item's record."""
    status: str  # ok, skipped or error
    error: str = ""
    node: str = ""  # where it ran (a Ray node id inside Ray)
    pid: int = 0

    def record(self) -> dict:
        """The fields kept in the item's cache record."""
        return {name: getattr(self, name) for name in self.recorded()}

    @classmethod
    def recorded(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls) if not f.metadata.get("transient"))

    @classmethod
    def from_record(cls, record: dict) -> Done:
        return cls(**{name: record[name] for name in cls.recorded() if name in record})


def transient(default=None):
    """A field that travels from the worker to the stage but is not kept in the record (the stage writes it)."""
    return field(default=default, metadata={"transient": True})


@dataclass(kw_only=True, slots=True)
class Spoken(Done):
    tts_seconds: float = 0.0  # wall time of synthesis
    audio_seconds: float = 0.0
    samples: np.ndarray | None = transient()  # float32 mono; written to the wav by the stage
    sr: int = transient(0)
    wav_sha256: str | None = None  # of the wav the stage wrote
    wav_bytes: int | None = None


@dataclass(kw_only=True, slots=True)
class Heard(Done):
    hypothesis: str = ""
    asr_seconds: float | None = None  # wall time of this utterance's decode
    mode: str = ""  # how the engine decoded it: window or long-form
    audio_sha256: str = ""  # of the audio heard, its level and length: filled in by the stage that read it
    level_dbfs: float | None = None
    audio_seconds: float | None = None


@dataclass(kw_only=True, slots=True)
class Assessed(Done):
    values: dict = field(default_factory=dict)  # the measure's columns
    notes: list = field(default_factory=list)
    embedding: list = field(default_factory=list)  # a voice embedding, where the measure makes one
    audio_sha256: str = ""  # of the audio measured, filled in by the stage that read it


class Worker(Protocol):
    """Loads its model once; `work` turns a batch of inputs into one result per input, each depending only on
    its own input. Local executors call it in-process, Ray calls it on an actor."""
    def work(self, batch: list) -> list[Done]: ...


def one_blas_thread() -> None:
    """numpy's BLAS on one thread in a process that computes per-utterance results. Its multi-threaded matrix
    products split the sums otherwise, so faster-whisper's mel features, and a transcript with them, depended on the
    core count and on the executor (measured: a tiny.en transcript at 10 dB SNR ended in `king."` on 2 threads and
    `king.` on 1, the thread count Ray gives its workers); each utterance already runs on one thread."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(1, user_api="blas")


def unloadable(source: Source, e: Exception) -> Exception:
    """What a model that failed to load stops the stage with, once, rather than on every row: a write that failed
    (a full disk while weights are converted) as the OSError it is, naming the file (exit 4); anything else as a
    model error naming the model's files (exit 2)."""
    if isinstance(e, OSError) and e.errno in WRITE_ERRORS:
        return e
    files = ", ".join(source.files) or source.path or source.spec
    return ModelUnloadable(f"{source.spec}: cannot load {files} ({type(e).__name__}: {e}); the files are damaged "
                           "or not of this model family: download or copy them again, or name another model")


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
            return Spoken(status="error", error=self.error, **where())
        t0 = time.perf_counter()
        try:
            samples, sr = self.voice.synthesize(text)
        except tts.UnspeakableText as e:
            return Spoken(status="skipped", error=str(e), **where())
        except Exception as e:  # one bad sentence must not stop the others
            return Spoken(status="error", error=f"{type(e).__name__}: {e}", **where())
        if not np.isfinite(samples).all():
            return Spoken(status="error", error=f"{self.voice.name} made non-finite samples (NaN or Inf)", **where())
        return Spoken(status="ok", samples=np.asarray(samples, dtype=np.float32), sr=sr,
                      tts_seconds=round(time.perf_counter() - t0, 4), audio_seconds=round(len(samples) / sr, 4),
                      **where())


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
        return [Heard(status="ok", hypothesis=text, asr_seconds=round(d["asr_seconds"], 4), mode=d.get("mode", ""),
                      **where()) for text, d in self.recognizer.transcribe(arrays)]


class Assessor:
    """One measure, loaded once from its resolved Source; each input is (16 kHz audio, speaker reference or None,
    a note on the reference), scored alone."""

    def __init__(self, name: str, source: Source, threads: int = 0):
        self.measure, self.failed = None, None
        self.threads = threads or min(os.cpu_count() or 1, 8)
        one_blas_thread()
        try:
            self.measure = measures.MEASURES.get(name).load(source)
        except Exception as e:
            self.failed = unloadable(source, e)

    def work(self, inputs: list[tuple]) -> list[Assessed]:
        if self.failed:
            raise self.failed
        with ThreadPoolExecutor(self.threads) as pool:
            return list(pool.map(self.one, inputs))

    def one(self, given: tuple) -> Assessed:
        audio, reference, note = given
        scores = self.measure.score(audio, reference)
        return Assessed(status="ok", values=dict(scores.values), notes=[*scores.notes, *([note] if note else [])],
                        embedding=list(scores.embedding), **where())
