"""The Voice interface and its registry.

A voice is named `family:voice` (`piper:joe`, `flite:slt`, `espeak:en-us`, `coqui:<name or path>`).
Each family is one module in this package that calls `register`; adding a family is adding a file."""
from __future__ import annotations

import importlib
import pkgutil
import re
from typing import Callable, Protocol

import numpy as np

from pipeline.config import ConfigError


class Voice(Protocol):
    name: str

    def synthesize(self, text: str) -> tuple[np.ndarray, int]:
        """Mono float32 audio in [-1, 1] and its sample rate."""

    def files(self) -> list[str]:
        """Model files this voice reads, for the run's manifest."""


class VoiceUnavailable(RuntimeError):
    """The voice cannot run here (a missing binary or package); the message says how to install it."""


class UnspeakableText(ValueError):
    """Text with nothing a voice could say (empty, whitespace, punctuation only)."""


_FAMILIES: dict[str, tuple[Callable[[str, dict], Voice], Callable[[str], None]]] = {}


def register(family: str, loader: Callable[[str, dict], Voice], check: Callable[[str], None] = lambda v: None):
    """`loader(voice, options)` builds a Voice; `check(voice)` raises ConfigError for a bad voice name."""
    _FAMILIES[family] = (loader, check)


def _discover() -> None:
    if _FAMILIES:
        return
    package = importlib.import_module(__package__)
    for info in pkgutil.iter_modules(package.__path__):
        if info.name != "base":
            importlib.import_module(f"{__package__}.{info.name}")


def families() -> list[str]:
    _discover()
    return sorted(_FAMILIES)


def check_name(name: str) -> None:
    _discover()
    family, sep, voice = name.partition(":")
    if not sep or family not in _FAMILIES or not voice:
        raise ConfigError(f"speech.voices: unknown voice {name!r}; use family:voice with family one of "
                          f"{', '.join(families())} (e.g. piper:joe, flite:slt, espeak:en-us)")
    _FAMILIES[family][1](voice)


def load(name: str, options: dict | None = None) -> Voice:
    check_name(name)
    family, _, voice = name.partition(":")
    return _FAMILIES[family][0](voice, options or {})


def speakable(text: str) -> str:
    """The text to speak, or UnspeakableText when no letter or digit is left to say."""
    text = re.sub(r"\s+", " ", text).strip()
    if not re.search(r"\w", text):
        raise UnspeakableText(f"nothing to speak in {text!r}: empty or punctuation only")
    return text


def chunks(text: str, max_chars: int = 300) -> list[str]:
    """Split text at sentence ends, then long runs at word boundaries.

    One 2,000-character sentence without punctuation makes Piper's model peak near 3 GB; chunks of a few
    hundred characters keep memory flat and sound the same, as a speaker pauses to breathe there."""
    out: list[str] = []
    for sentence in re.split(r"(?<=[.!?;:])\s+", text):
        current = ""
        for word in sentence.split():
            if current and len(current) + 1 + len(word) > max_chars:
                out.append(current)
                current = word
            else:
                current = f"{current} {word}" if current else word
        if current:
            out.append(current)
    return out


def join(pieces: list[np.ndarray], sr: int, gap_s: float = 0.1) -> np.ndarray:
    """Concatenate chunk audio with a short silence between chunks."""
    gap = np.zeros(int(sr * gap_s), dtype=np.float32)
    parts: list[np.ndarray] = []
    for i, piece in enumerate(pieces):
        if i:
            parts.append(gap)
        parts.append(np.asarray(piece, dtype=np.float32))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
