"""Audio in and out without ffmpeg: soundfile to read and write, soxr to resample."""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

from pipeline.core import store

SAMPLE_RATE = 16000  # what Whisper hears
N_SAMPLES = 30 * SAMPLE_RATE  # one Whisper window; longer audio goes through long-form transcription
HOP_LENGTH = 160  # samples per log-mel frame: 100 frames a second, 3000 a window
LEVEL_FRAME_S = 0.03
FLOOR_DBFS = -120.0  # digital silence: a finite number for CSV and JSON instead of -inf


class BadAudio(ValueError):
    """An audio file that cannot be used: missing, empty, corrupt, silent-length or damaged (NaN, Inf)."""


def read(path: str | Path) -> tuple[np.ndarray, int]:
    """Mono float32 samples and the rate; BadAudio names the file and the problem."""
    path = Path(path)
    if not path.is_file():
        raise BadAudio(f"{path}: no such audio file")
    if path.stat().st_size == 0:
        raise BadAudio(f"{path}: empty file (0 bytes)")
    torn = wav_shortfall(path)
    if torn:
        promised, held = torn
        raise BadAudio(f"{path}: torn: its header promises {promised} bytes of audio, the file holds {held} (a copy "
                       "or download cut short?); copy or write it again")
    try:
        audio, sr = sf.read(path, dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError) as e:
        raise BadAudio(f"{path}: unreadable audio ({e}); give a wav/flac/ogg file") from None
    if len(audio) == 0:
        raise BadAudio(f"{path}: no samples")
    if not np.isfinite(audio).all():  # a damaged float recording, not silence: no engine should hear it
        raise BadAudio(f"non-finite samples (NaN or Inf) in {path}")
    return audio.mean(axis=1), sr


def wav_shortfall(path: Path) -> tuple[int, int] | None:
    """(bytes promised, bytes held) when a WAV file's data chunk claims more audio than the file holds: libsndfile
    reads what is left without a word, so a torn file would be scored on its first half. None for any other file,
    and for a data chunk of unknown length (0 or 0xFFFFFFFF, as a writer streaming to a pipe leaves it)."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(12)
        if head[:4] not in (b"RIFF", b"RIFX") or head[8:12] != b"WAVE":
            return None
        order = "little" if head[:4] == b"RIFF" else "big"
        at = 12
        while at + 8 <= size:
            f.seek(at)
            chunk = f.read(8)
            length = int.from_bytes(chunk[4:8], order)
            if chunk[:4] == b"data":
                held = size - at - 8
                return (length, held) if length not in (0, 0xFFFFFFFF) and length > held else None
            at += 8 + length + (length & 1)
    return None


def resample(audio: np.ndarray, sr: int, target: int = SAMPLE_RATE) -> np.ndarray:
    if sr == target:
        return np.ascontiguousarray(audio, dtype=np.float32)
    return soxr.resample(audio, sr, target, quality="HQ").astype(np.float32)


def load_16k(path: str | Path) -> np.ndarray:
    """What Whisper takes: float32 mono at 16 kHz."""
    audio, sr = read(path)
    return resample(audio, sr)


def load_at(path: str | Path, rate: int) -> np.ndarray:
    """float32 mono at `rate` as librosa.load(path, sr=rate) gives it: soxr HQ, then zero-padded or cut to
    ⌈n · rate / sr⌉ samples, as librosa's fix_length does (soxr itself rounds)."""
    audio, sr = read(path)
    if sr == rate:
        return np.ascontiguousarray(audio, dtype=np.float32)
    out = resample(audio, sr, rate)
    n = int(np.ceil(len(audio) * float(rate) / sr))
    return np.pad(out, (0, max(0, n - len(out))))[:n]


def write_wav(path: str | Path, audio: np.ndarray, sr: int) -> None:
    """16-bit PCM wav, written atomically. Encoded in memory first, so a full disk is an OSError like any other
    write (libsndfile would report it as its own error)."""
    buf = io.BytesIO()
    sf.write(buf, np.clip(audio, -1.0, 1.0), sr, subtype="PCM_16", format="WAV")
    store.write_bytes(path, buf.getvalue())


def level_dbfs(audio: np.ndarray, sr: int = SAMPLE_RATE) -> float:
    """RMS level of the loudest 30 ms frame, in dB relative to full scale: how loud the speech in the audio
    gets, whatever its length. Digital silence gives FLOOR_DBFS."""
    frame = max(1, int(sr * LEVEL_FRAME_S))
    x = np.asarray(audio, dtype=np.float64)
    n = len(x) // frame
    frames = x[:n * frame].reshape(n, frame) if n else x[None]
    peak = float(np.sqrt(np.max(np.mean(np.square(frames), axis=1)))) if len(x) else 0.0
    return round(max(FLOOR_DBFS, 20 * np.log10(peak)) if peak > 0 else FLOOR_DBFS, 2)
