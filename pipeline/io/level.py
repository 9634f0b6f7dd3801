"""Active speech level, ITU-T P.56 method B, and a clip brought to a given level (P.800 asks a listening test to
play every clip at one level, so that loudness neither tells the systems apart nor sways the votes).

Method B as the Recommendation defines it: the rectified signal through two first-order smoothers (time constant
T_S), a sample is active at a threshold when the envelope reached it within the last HANGOVER_S; the active level
at each threshold is the energy over its active samples; the speech level is where that level stands MARGIN_DB
above its threshold, interpolated in dB between the two thresholds around it. The thresholds are 2⁻¹⁵ … 2⁻¹ of full
scale, a 16-bit signal's. ITU-T G.191's sv56 C code breaks its per-sample loop at the first threshold that is
neither reached nor in hangover, which can leave a higher threshold's hangover counter unadvanced; this follows
the Recommendation's definition, which that freeze departs from only in rare envelope shapes."""
from __future__ import annotations

import numpy as np

T_S = 0.03
HANGOVER_S = 0.2
MARGIN_DB = 15.9
THRESHOLDS = 2.0 ** np.arange(-15, 0)  # full scale 1.0
TARGET_DBOV = -26.0  # P.56's customary level for listening material


def active_level(samples: np.ndarray, sr: int) -> float | None:
    """The active speech level in dB relative to full scale (dBov), or None for a clip with no speech in it."""
    from scipy.signal import lfilter

    x = np.asarray(samples, dtype=np.float64)
    if not len(x):
        return None
    g = np.exp(-1.0 / (sr * T_S))
    envelope = lfilter([1 - g], [1, -g], lfilter([1 - g], [1, -g], np.abs(x)))
    hang = int(np.ceil(sr * HANGOVER_S))
    # active at k: the envelope reached the threshold at some sample of k − hang … k
    reached = _trailing_max(envelope, hang)
    energy = float(np.sum(x * x))
    active = np.array([np.count_nonzero(reached >= c) for c in THRESHOLDS], dtype=float)
    if active[0] == 0 or energy == 0:
        return None
    with np.errstate(divide="ignore"):
        level = 10 * np.log10(energy / np.maximum(active, 1))
    threshold = 20 * np.log10(THRESHOLDS)
    delta = level - threshold
    if delta[0] <= MARGIN_DB:
        return float(level[0])
    for j in range(1, len(THRESHOLDS)):
        if active[j] == 0 or delta[j] <= MARGIN_DB:
            if active[j] == 0:
                return float(level[j - 1])
            share = (delta[j - 1] - MARGIN_DB) / (delta[j - 1] - delta[j])  # where Δ crosses the margin
            return float(level[j - 1] + share * (level[j] - level[j - 1]))
    return float(level[-1])


def _trailing_max(x: np.ndarray, window: int) -> np.ndarray:
    """max(x[k − window … k]) for each k."""
    from scipy.ndimage import maximum_filter1d

    padded = np.concatenate([np.zeros(window), x])
    return maximum_filter1d(padded, size=window + 1, origin=window // 2, mode="constant")[window:]


def leveled(samples: np.ndarray, sr: int, target_dbov: float = TARGET_DBOV) -> np.ndarray:
    """The clip at `target_dbov` active speech level (unchanged where it holds no speech)."""
    level = active_level(samples, sr)
    if level is None:
        return samples
    return (np.asarray(samples, dtype=np.float64) * 10 ** ((target_dbov - level) / 20)).astype(np.float32)
