"""The Voice interface and its registry.

A voice is named `family:voice` (`piper:joe`, `piper:en_GB-alan-medium`, `piper:/path/voice.onnx`, `flite:slt`,
`espeak:en-us`, `coqui:<name or path>`). Each family is one module in this package that calls `VOICES.register`;
adding a family is adding a file. A voice's model is found before any work (its Source, pipeline/core/source.py)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from pipeline.core.options import option
from pipeline.core.registry import Registry
from pipeline.core.source import Source
from pipeline.io import conditions

VOICES = Registry(__package__, "tts.voices", "piper:joe, flite:slt, espeak:en-us", "speech_eval.voices",
                  ("base", "speaker"))


@dataclass(frozen=True)
class TTSConfig:
    """The `tts` config section: who speaks, and the acoustic conditions their speech is heard in."""
    voices: list[str] = option(["piper:joe"], "comma-separated voices, e.g. piper:joe,flite:slt,espeak:en-us; in a "
                               "command of several languages, zh=espeak:cmn speaks only zh", flag="--voices",
                               check=VOICES.check_all)
    conditions: list[str] = option(["clean"], "comma-separated, e.g. clean,noise:snr=10,speed:0.9,silence",
                                   flag="--conditions", check=conditions.check_all)
    voice_noise: bool = option(False, "Piper's own noise; off keeps synthesis bit-identical")
    # where a model is looked for cannot change what it says: the model's own hashes are in every key
    piper_dirs: list[str] = option([], "folders searched for piper:<voice> (<voice>.onnx + .onnx.json), after "
                                   "models/piper/", speed_only=True)
    seed: int = option(1337, "seed of the noise conditions")


class Voice(Protocol):
    name: str

    def synthesize(self, text: str) -> tuple[np.ndarray, int]:
        """Mono float32 audio in [-1, 1] and its sample rate."""



class VoiceUnavailable(RuntimeError):
    """The voice cannot run here (a missing binary or package); the message says how to install it."""


class UnspeakableText(ValueError):
    """Text with nothing a voice could say (empty, whitespace, punctuation only)."""


def resolve(name: str, options: TTSConfig | None = None, models_dir: str = "models") -> Source:
    return VOICES.resolve(name, options or TTSConfig(), models_dir)


def load(voice: str | Source, options: TTSConfig | None = None, models_dir: str = "models") -> Voice:
    options = options or TTSConfig()
    source = voice if isinstance(voice, Source) else resolve(voice, options, models_dir)
    return VOICES.load(source, options)


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
