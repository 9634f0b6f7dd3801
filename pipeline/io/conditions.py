"""Acoustic conditions applied to clean speech: `clean`, `noise:snr=<dB>`, `speed:<factor>`, and the null
condition `silence`: digital silence as long as the clean audio, which measures what an engine invents when
nobody speaks."""
from __future__ import annotations

import re
import zlib
from dataclasses import dataclass

import numpy as np

from pipeline.errors import ConfigError

SILENCE = "silence"
CLEAN = "clean"
ALLOWED = "clean, silence, noise:snr=<dB> (e.g. noise:snr=10), speed:<factor> (e.g. speed:0.9)"


@dataclass(frozen=True)
class Condition:
    kind: str  # clean | silence | noise | speed
    value: float = 0.0

    @property
    def name(self) -> str:
        if self.kind == "noise":
            return f"noise:snr={self.value:g}"
        if self.kind == "speed":
            return f"speed:{self.value:g}"
        return self.kind


def parse(text: str) -> Condition:
    text = text.strip()
    if text in ("clean", SILENCE):
        return Condition(text)
    m = re.fullmatch(r"noise:snr=(.+)", text)
    if m:
        try:
            return Condition("noise", float(m.group(1)))
        except ValueError:
            raise ConfigError(f"tts.conditions: {text!r} has SNR {m.group(1)!r}, not a number of dB; "
                              f"allowed: {ALLOWED}") from None
    m = re.fullmatch(r"speed:(.+)", text)
    if m:
        try:
            factor = float(m.group(1))
        except ValueError:
            factor = 0.0
        if not 0.25 <= factor <= 4:
            raise ConfigError(f"tts.conditions: {text!r} needs a speed factor between 0.25 and 4; "
                              f"allowed: {ALLOWED}")
        return Condition("speed", factor)
    raise ConfigError(f"tts.conditions: unknown condition {text!r}; allowed: {ALLOWED}")


def check_all(names: list[str]) -> None:
    if not names:
        raise ConfigError("tts.conditions needs at least one entry, e.g. clean")
    for name in names:
        parse(name)


def item_seed(seed: int, *parts: str) -> int:
    """A seed per item, stable across runs and independent of the order items are processed in."""
    return zlib.crc32("\x1f".join([str(seed), *parts]).encode())


def add_noise(audio: np.ndarray, snr_db: float, rng: np.random.Generator) -> np.ndarray:
    """White Gaussian noise scaled so that 10·log10(P_signal / P_noise) equals snr_db exactly."""
    noise = rng.standard_normal(len(audio)).astype(np.float64)
    p_signal = float(np.mean(np.square(audio, dtype=np.float64)))
    p_noise = float(np.mean(np.square(noise)))
    if p_signal == 0.0 or p_noise == 0.0:
        return audio.astype(np.float32)
    noise *= np.sqrt(p_signal / (p_noise * 10 ** (snr_db / 10)))
    mixed = audio + noise
    peak = float(np.max(np.abs(mixed)))
    if peak > 1.0:  # scale, not clip: a common gain keeps the SNR exact and the wav in range
        mixed /= peak
    return mixed.astype(np.float32)


def change_speed(audio: np.ndarray, sr: int, factor: float) -> np.ndarray:
    """Play `factor` times faster by resampling (pitch moves with it, as a tape would)."""
    import librosa

    return librosa.resample(audio.astype(np.float32), orig_sr=sr * factor, target_sr=sr,
                            res_type="soxr_hq").astype(np.float32)


def apply(condition: Condition, audio: np.ndarray, sr: int, seed: int) -> np.ndarray:
    if condition.kind == "noise":
        return add_noise(audio, condition.value, np.random.default_rng(seed))
    if condition.kind == "speed":
        return change_speed(audio, sr, condition.value)
    if condition.kind == SILENCE:
        return np.zeros_like(audio, dtype=np.float32)
    return audio
