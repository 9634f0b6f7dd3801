"""Spectral features as librosa 0.11 makes them, in numpy alone: `librosa.filters.mel` with its defaults (Slaney's
mel scale, area-normalised triangles, float32) and the periodic Hann window of `scipy.signal.get_window`, for
DNSMOS's P.808 model; `librosa.feature.melspectrogram` with its defaults, for Resemblyzer's speaker encoder.
The same operations in the same order, on arrays of the same layout, give the same floats (tests/test_measures.py
compares them bit for bit): importing librosa's spectral modules brings scipy.signal and numba's kernels, 0.8-2 s
of every run that measures DNSMOS or speaker similarity."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

F_SP = 200.0 / 3  # Slaney's scale: linear below 1 kHz, 200/3 Hz a mel; logarithmic above
MIN_LOG_HZ = 1000.0
MIN_LOG_MEL = MIN_LOG_HZ / F_SP
LOGSTEP = np.log(6.4) / 27.0


def hz_to_mel(hz):
    hz = np.asanyarray(hz)
    mels = hz / F_SP
    if hz.ndim:
        above = hz >= MIN_LOG_HZ
        mels[above] = MIN_LOG_MEL + np.log(hz[above] / MIN_LOG_HZ) / LOGSTEP
    elif hz >= MIN_LOG_HZ:
        mels = MIN_LOG_MEL + np.log(hz / MIN_LOG_HZ) / LOGSTEP
    return mels


def mel_to_hz(mels: np.ndarray) -> np.ndarray:
    hz = F_SP * mels
    above = mels >= MIN_LOG_MEL
    hz[above] = MIN_LOG_HZ * np.exp(LOGSTEP * (mels[above] - MIN_LOG_MEL))
    return hz


def mel(sr: int, n_fft: int, n_mels: int) -> np.ndarray:
    """(n_mels, 1 + n_fft // 2) float32: librosa.filters.mel(sr=sr, n_fft=n_fft, n_mels=n_mels)."""
    weights = np.zeros((n_mels, 1 + n_fft // 2), dtype=np.float32)
    bins = np.fft.rfftfreq(n=n_fft, d=1.0 / sr)
    edges = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(float(sr) / 2), n_mels + 2))
    widths = np.diff(edges)
    ramps = np.subtract.outer(edges, bins)
    for i in range(n_mels):
        weights[i] = np.maximum(0, np.minimum(-ramps[i] / widths[i], ramps[i + 2] / widths[i + 1]))
    weights *= (2.0 / (edges[2:n_mels + 2] - edges[:n_mels]))[:, np.newaxis]
    return weights


def hann(n: int) -> np.ndarray:
    """float64: scipy.signal.get_window("hann", n, fftbins=True), one period of n + 1 points less its last."""
    angles = np.linspace(-np.pi, np.pi, n + 1, dtype=np.float64)
    window = np.zeros(n + 1, dtype=np.float64)
    for k, a in enumerate(np.asarray([0.5, 1.0 - 0.5], dtype=np.float64)):
        window += a * np.cos(k * angles)
    return window[:-1]


def melspectrogram(y: np.ndarray, sr: int, n_fft: int, hop_length: int, n_mels: int) -> np.ndarray:
    """(n_mels, frames) float32: librosa.feature.melspectrogram(y=y, sr=sr, n_fft=n_fft, hop_length=hop_length,
    n_mels=n_mels) of float32 audio: power 2 of its centred STFT (n_fft // 2 zeros each side, a periodic Hann
    window in float64, each frame's rfft in float64 stored as complex64 in a Fortran-ordered matrix, as librosa
    stores it) times the mel filters, through the same einsum."""
    window, filters = _spectrogram_filters(sr, n_fft, n_mels)
    padded = np.pad(np.asarray(y, dtype=np.float32), n_fft // 2)
    frames = np.lib.stride_tricks.sliding_window_view(padded, n_fft)[::hop_length].T
    stft = np.zeros((1 + n_fft // 2, frames.shape[1]), dtype=np.complex64, order="F")
    stft[:] = np.fft.rfft(window * frames, axis=-2)
    return np.einsum("...ft,mf->...mt", np.abs(stft) ** 2, filters, optimize=True)


@lru_cache(maxsize=4)
def _spectrogram_filters(sr: int, n_fft: int, n_mels: int) -> tuple[np.ndarray, np.ndarray]:
    """melspectrogram's window (a column) and mel filters, made once, not for every clip (a tenth of its cost);
    read-only, since every call shares them."""
    window, filters = hann(n_fft)[:, np.newaxis], mel(sr, n_fft, n_mels)
    window.flags.writeable = filters.flags.writeable = False
    return window, filters
