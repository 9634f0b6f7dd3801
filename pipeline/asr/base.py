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
PACK_GAP_S = 1.5  # silence between packed utterances: long enough that Whisper ends a segment there
PACK_LIMIT_S = 29.0  # leave the window's last second free, so the final segment can close
WINDOWS_PER_BATCH = 4
UTTERANCES_PER_BATCH = 8  # unpacked: more costs memory (32 at once peaked at 3.4 GB) and gains nothing
Segment = tuple[float, float, str]  # start s, end s, text


@dataclass
class Options:
    """The Whisper options that matter for evaluation; recorded with every run."""
    language: str = "en"
    beam_size: int = 1
    temperature: float = 0.0
    condition_on_previous_text: bool = False
    compute_type: str = "int8"
    batch_size: int = 32
    pack: bool = True  # engines that can: several short utterances share one 30 s window (see run_packed)
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


def batches(sizes: list[int], batch_size: int) -> list[list[int]]:
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
    for idx in batches(sizes, batch_size):
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


def pack(sizes: list[int], gap_s: float = PACK_GAP_S, limit_s: float = PACK_LIMIT_S) -> list[list[int]]:
    """Group utterance indices, in order, into windows of at most limit_s seconds with gap_s between them."""
    windows, current, length = [], [], 0.0
    for i, n in enumerate(sizes):
        seconds = n / SAMPLE_RATE
        if current and length + gap_s + seconds > limit_s:
            windows.append(current)
            current, length = [], 0.0
        length += (gap_s if current else 0.0) + seconds
        current.append(i)
    if current:
        windows.append(current)
    return windows


def window_audio(arrays: list[np.ndarray], gap_s: float = PACK_GAP_S) -> tuple[np.ndarray, list[float]]:
    """The utterances joined by silence, and the start time of each in the window."""
    gap = np.zeros(int(SAMPLE_RATE * gap_s), dtype=np.float32)
    pieces, starts, pos = [], [], 0
    for k, a in enumerate(arrays):
        if k:
            pieces.append(gap)
            pos += len(gap)
        starts.append(pos / SAMPLE_RATE)
        pieces.append(a.astype(np.float32, copy=False))
        pos += len(a)
    return np.concatenate(pieces), starts


def assign(segments: list[Segment], starts: list[float], gap_s: float = PACK_GAP_S) -> list[str]:
    """Each segment's text goes to the utterance whose slot holds the segment's midpoint; slots meet halfway
    through the silence between utterances."""
    texts = [[] for _ in starts]
    for start, end, text in segments:
        mid = (start + end) / 2
        k = max(j for j in range(len(starts)) if j == 0 or mid >= starts[j] - gap_s / 2)
        texts[k].append(text.strip())
    return [" ".join(t for t in parts if t) for parts in texts]


def run_packed(batch: list[np.ndarray], segments: Callable[[list[np.ndarray]], list[list[Segment]]],
               short: Callable[[list[np.ndarray]], list[str]], long: Callable[[np.ndarray], str],
               tries: int = 2) -> list[tuple[str, dict]]:
    """Transcribe short utterances packed several to a 30 s window, WINDOWS_PER_BATCH windows per decoding batch.

    The encoder's cost is per window, not per second of speech, so a 3 s utterance alone pays for 27 s of
    padding; packed, seven share one window. `segments` decodes window audio with timestamps; each segment is
    given back to its utterance by time. Whisper sometimes ends a window early: utterances left with no text
    are packed again (`tries` passes in all), then decoded on their own with `short`, so no speech is dropped.
    Long audio goes to `long`."""
    out: list[tuple[str, dict] | None] = [None] * len(batch)
    sizes = [len(a) for a in batch]
    short_ids = [i for i, n in enumerate(sizes) if n <= WINDOW_SAMPLES]
    windows = [[short_ids[k] for k in w] for w in pack([sizes[i] for i in short_ids])]
    retry: list[int] = []
    for b in range(0, len(windows), WINDOWS_PER_BATCH):
        group = windows[b:b + WINDOWS_PER_BATCH]
        t0 = time.perf_counter()
        built = [window_audio([batch[i] for i in w]) for w in group]
        decoded = segments([audio for audio, _ in built])
        seconds = time.perf_counter() - t0
        total = sum(sizes[i] for w in group for i in w) or 1
        for w, (_, starts), segs in zip(group, built, decoded):
            for i, text in zip(w, assign(segs, starts)):
                if text:
                    out[i] = (text, {"asr_seconds": seconds * sizes[i] / total, "mode": "packed", "batch": len(w)})
                else:
                    retry.append(i)
    if retry:
        again = (run_packed([batch[i] for i in retry], segments, short, long, tries - 1) if tries > 1
                 else run_batches([batch[i] for i in retry], UTTERANCES_PER_BATCH, short, long))
        for i, (text, details) in zip(retry, again):
            out[i] = (text, {**details, "mode": f"{details['mode']}-retry"})
    long_ids = [i for i, n in enumerate(sizes) if n > WINDOW_SAMPLES]
    for i, result in zip(long_ids, run_batches([batch[i] for i in long_ids], 1, short, long)):
        out[i] = result
    return out
