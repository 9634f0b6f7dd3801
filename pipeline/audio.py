"""Audio in and out without ffmpeg: soundfile to read and write, soxr to resample."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

from pipeline import store

WHISPER_RATE = 16000


class BadAudio(ValueError):
    """An audio file that cannot be used: missing, empty, corrupt or silent-length."""


def read(path: str | Path) -> tuple[np.ndarray, int]:
    """Mono float32 samples and the rate; BadAudio names the file and the problem."""
    path = Path(path)
    if not path.is_file():
        raise BadAudio(f"{path}: no such audio file")
    if path.stat().st_size == 0:
        raise BadAudio(f"{path}: empty file (0 bytes)")
    try:
        audio, sr = sf.read(path, dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError) as e:
        raise BadAudio(f"{path}: unreadable audio ({e}); give a wav/flac/ogg file") from None
    if len(audio) == 0:
        raise BadAudio(f"{path}: no samples")
    return audio.mean(axis=1), sr


def resample(audio: np.ndarray, sr: int, target: int = WHISPER_RATE) -> np.ndarray:
    if sr == target:
        return np.ascontiguousarray(audio, dtype=np.float32)
    return soxr.resample(audio, sr, target, quality="HQ").astype(np.float32)


def load_16k(path: str | Path) -> np.ndarray:
    """What Whisper takes: float32 mono at 16 kHz."""
    audio, sr = read(path)
    return resample(audio, sr)


def write_wav(path: str | Path, audio: np.ndarray, sr: int) -> None:
    """16-bit PCM wav, written atomically."""
    with store.atomic_path(path) as tmp:
        sf.write(tmp, np.clip(audio, -1.0, 1.0), sr, subtype="PCM_16", format="WAV")


def duration(audio: np.ndarray, sr: int) -> float:
    return len(audio) / sr
