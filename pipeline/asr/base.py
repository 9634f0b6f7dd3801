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
import pkgutil
import time
from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np

from pipeline.audio import WHISPER_RATE
from pipeline.config import ConfigError

WINDOW_SAMPLES = 30 * WHISPER_RATE  # Whisper's window: longer audio goes through long-form transcription
SAMPLING_SEED = 0  # temperature > 0 only: each utterance's sampler starts from this seed


@dataclass
class Options:
    """The Whisper options that matter for evaluation; recorded with every run. Every field but `threads`
    and `models_dir` can change a transcript, so the transcript cache is keyed on them."""
    language: str = "en"
    beam_size: int = 1
    temperature: float = 0.0
    condition_on_previous_text: bool = False
    compute_type: str = "int8"
    threads: int = 0
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


def decode_each(arrays: list[np.ndarray], short: Callable[[np.ndarray], str], long: Callable[[np.ndarray], str],
                reseed: Callable[[], object]) -> list[tuple[str, dict]]:
    """Each utterance alone: `short` for audio up to 30 s (one padded window), `long` past it. `reseed` resets
    the engine's sampler first, so that with temperature > 0 no utterance's draw depends on those before it."""
    out = []
    for audio in arrays:
        t0 = time.perf_counter()
        reseed()
        if len(audio) > WINDOW_SAMPLES:
            text, mode = long(audio), "long-form"
        else:
            text, mode = short(audio), "window"
        out.append((text, {"asr_seconds": time.perf_counter() - t0, "mode": mode}))
    return out
