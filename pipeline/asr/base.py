"""The Recognizer interface and its registry.

Engines are named `engine:model` (`faster-whisper:base`, `openai-whisper:tiny.en`). Each engine is one
module in this package that calls `register`. A recognizer takes a list of 16 kHz float32 arrays and
returns one (text, details) per array.

The invariant every engine keeps: an utterance's transcript depends only on its own audio, the model and the
Options below. Each utterance is decoded alone, in its own Whisper window (or through long-form transcription
past 30 s), never batched or packed with its neighbours: padding, batch shape and the text of the audio next to
it can all change what Whisper writes (tests/test_invariance.py)."""
from __future__ import annotations

import importlib
import os
import pkgutil
import queue
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np

from pipeline.audio import WHISPER_RATE
from pipeline.config import ConfigError

WINDOW_SAMPLES = 30 * WHISPER_RATE  # Whisper's window: longer audio goes through long-form transcription
SAMPLING_SEED = 0  # temperature > 0 only: each utterance's sampler starts from this seed
DEFAULT_MAX_DECODERS = 8
DECODING = "each utterance alone in its own 30 s window (long-form past 30 s), one thread per decode"


@dataclass
class Options:
    """The Whisper options that matter for evaluation; recorded with every run. Every field but `threads`
    and `models_dir` can change a transcript, so the transcript cache is keyed on them."""
    language: str = "en"
    beam_size: int = 1
    temperature: float = 0.0
    condition_on_previous_text: bool = False
    compute_type: str = "int8"
    threads: int = 0  # utterances decoded at once, each on one thread (see parallel_decoders); 0: one per core
    models_dir: str = "models"


class Recognizer(Protocol):
    name: str

    def transcribe(self, batch: list[np.ndarray]) -> list[tuple[str, dict]]:
        """One (text, details) per 16 kHz float32 array, in order."""

    def files(self) -> list[str]:
        """Weight files read, for the manifest."""


_ENGINES: dict[str, tuple[Callable[[str, Options], Recognizer], tuple[str, ...]]] = {}


def register(engine: str, loader: Callable[[str, Options], Recognizer], models: tuple[str, ...]) -> None:
    _ENGINES[engine] = (loader, models)


def _discover() -> None:
    if _ENGINES:
        return
    package = importlib.import_module(__package__)
    for info in pkgutil.iter_modules(package.__path__):
        if info.name not in ("base", "weights"):
            importlib.import_module(f"{__package__}.{info.name}")


def names() -> list[str]:
    _discover()
    return [f"{engine}:{model}" for engine, (_, models) in sorted(_ENGINES.items()) for model in models]


def check_name(name: str) -> None:
    _discover()
    engine, _, model = name.partition(":")
    if engine not in _ENGINES or model not in _ENGINES[engine][1]:
        raise ConfigError(f"speech.asr: unknown engine {name!r}; available: {', '.join(names())}")


def load(name: str, options: Options) -> Recognizer:
    check_name(name)
    engine, _, model = name.partition(":")
    return _ENGINES[engine][0](model, options)


@dataclass(frozen=True)
class Decoder:
    """One copy of an engine that decodes one utterance at a time, on one thread."""
    short: Callable[[np.ndarray], str]  # audio up to 30 s: one padded window
    long: Callable[[np.ndarray], str]  # longer audio: the engine's long-form transcription
    reseed: Callable[[], object]  # resets the engine's sampler, for temperature > 0


def parallel_decoders(options: Options) -> int:
    """How many utterances are decoded at once. Each decode runs on a single thread, so its arithmetic, and so
    its transcript, is the same whatever the thread count; more cores mean more utterances at a time, up to
    DEFAULT_MAX_DECODERS unless `threads` asks for more (openai-whisper keeps a model copy per decoder).
    Sampling (temperature > 0) reseeds a process-wide generator before each utterance, so it goes one by one."""
    if options.temperature > 0:
        return 1
    return options.threads or min(os.cpu_count() or 1, DEFAULT_MAX_DECODERS)


def decode_each(arrays: list[np.ndarray], decoders: list[Decoder]) -> list[tuple[str, dict]]:
    """Each utterance alone, on whichever decoder is free, results in input order."""
    free: queue.SimpleQueue[Decoder] = queue.SimpleQueue()
    for d in decoders:
        free.put(d)

    def one(audio: np.ndarray) -> tuple[str, dict]:
        d = free.get()
        try:
            t0 = time.perf_counter()
            d.reseed()
            long = len(audio) > WINDOW_SAMPLES
            text = d.long(audio) if long else d.short(audio)
            return text, {"asr_seconds": time.perf_counter() - t0, "mode": "long-form" if long else "window"}
        finally:
            free.put(d)

    if len(decoders) == 1:
        return [one(a) for a in arrays]
    with ThreadPoolExecutor(len(decoders)) as pool:
        return list(pool.map(one, arrays))
