"""The Recognizer interface and its registry.

Engines are named `engine:model` (`faster-whisper:base`, `openai-whisper:tiny.en`). Each engine is one
module in this package that calls `register`. A recognizer takes a batch of 16 kHz float32 arrays and
returns one (text, details) per array; it batches internally where it can."""
from __future__ import annotations

import importlib
import pkgutil
import time
from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np

from pipeline.config import ConfigError

SAMPLE_RATE = 16000
WINDOW_SAMPLES = 30 * SAMPLE_RATE  # Whisper's window: longer audio goes through long-form transcription


@dataclass
class Options:
    """The Whisper options that matter for evaluation; recorded with every run."""
    language: str = "en"
    beam_size: int = 1
    temperature: float = 0.0
    condition_on_previous_text: bool = False
    compute_type: str = "int8"
    batch_size: int = 8
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


def batches(items: list, sizes: list[int], batch_size: int) -> list[list[int]]:
    """Index batches of short items (≤ 30 s) sorted by length, so padding wastes little; long items alone."""
    short = sorted((i for i, n in enumerate(sizes) if n <= WINDOW_SAMPLES), key=lambda i: sizes[i])
    out = [short[k:k + batch_size] for k in range(0, len(short), batch_size)]
    out += [[i] for i, n in enumerate(sizes) if n > WINDOW_SAMPLES]
    return out


def run_batches(batch: list[np.ndarray], batch_size: int, short: Callable[[list[np.ndarray]], list[str]],
                long: Callable[[np.ndarray], str]) -> list[tuple[str, dict]]:
    """Decode short audio `batch_size` at a time with `short`, long audio one by one with `long`.

    Each item's asr_seconds is its batch's wall time shared out by audio length."""
    out: list[tuple[str, dict] | None] = [None] * len(batch)
    sizes = [len(a) for a in batch]
    for idx in batches(batch, sizes, batch_size):
        t0 = time.perf_counter()
        if sizes[idx[0]] > WINDOW_SAMPLES:
            texts, mode = [long(batch[idx[0]])], "long-form"
        else:
            texts, mode = short([batch[i] for i in idx]), "batched"
        seconds = time.perf_counter() - t0
        total = sum(sizes[i] for i in idx) or 1
        for i, text in zip(idx, texts):
            out[i] = (text, {"asr_seconds": seconds * sizes[i] / total, "mode": mode, "batch": len(idx)})
    return out
