"""How much noise breaks what people hear, beside what the engines hear: for a test made over several of the runs'
conditions (`listen create --condition clean,noise:snr=10,noise:snr=0`), each voice's WER at each SNR by its
listeners and by each engine on the very same clips, and the breakdown SNR as the tool gives it for engines
(statistics/robustness.py: where WER first reaches twice its clean value, at least MIN_THRESHOLD, interpolated
between the SNRs measured). The listeners' interval resamples listeners and sentences together, an engine's the
sentences alone; a sentence moves with all of its conditions. With each sentence heard once by a listener (a
transcription test's rule), a listener's conditions are of different sentences, so the curve compares listeners
as well as conditions: the interval carries that."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.core.records import joined
from pipeline.listen import analysis
from pipeline.scoring.paired import resampled_counts
from pipeline.statistics.robustness import MIN_THRESHOLD, SnrWer, crossing, snr_of

CLEAN = "clean"


@dataclass(frozen=True, kw_only=True)
class Breakdown:
    """A voice's WER by SNR and its breakdown SNR (breakdown.csv), by its listeners or one engine."""
    system: str  # the run (and voice), less its condition
    by: str  # listeners, or the engine
    answers: int  # scored answers (or transcripts) over its conditions
    clean_wer: float | None
    threshold: float | None  # twice the clean WER (at least MIN_THRESHOLD)
    breakdown_snr: float | None  # dB: where WER first reaches the threshold; None: never, at the SNRs measured
    ci95_low: float | None
    ci95_high: float | None
    curve: list[SnrWer] = joined(SnrWer.parse)  # the micro WER at each SNR measured, highest SNR first


@dataclass(frozen=True)
class Counted:
    """One answer or transcript: who, of which sentence, in which condition, and its strict counts."""
    who: str
    sentence: str
    condition: str
    errors: int
    words: int


def breakdown(system: str, by: str, counted: list[Counted], n_boot: int, seed: int) -> Breakdown | None:
    """A voice's row, from its answers (or one engine's transcripts) in clean and in noise at known SNRs; None
    without clean and at least one SNR."""
    counted = [h for h in counted if h.condition == CLEAN or snr_of(h.condition) is not None]
    snrs = sorted({h.condition for h in counted if h.condition != CLEAN}, key=snr_of, reverse=True)
    if not snrs or not any(h.condition == CLEAN for h in counted):
        return None
    who, _ = analysis.index([h.who for h in counted])
    item, sentences = analysis.index([h.sentence for h in counted])
    errors = np.array([h.errors for h in counted], dtype=float)
    words = np.array([h.words for h in counted], dtype=float)
    wl, wi = resampled_counts(int(who.max()) + 1, len(sentences), n_boot, seed)
    weights = np.vstack([np.ones(len(counted)), wl[:, who] * wi[:, item]])  # the point estimate first
    rates = {}
    for condition in (CLEAN, *snrs):
        mine = np.array([h.condition == condition for h in counted])
        with np.errstate(invalid="ignore", divide="ignore"):
            rates[condition] = (weights[:, mine] * errors[mine]).sum(1) / (weights[:, mine] * words[mine]).sum(1)
    found = []
    for draw in range(len(weights)):
        clean, curve = rates[CLEAN][draw], [(snr_of(c), rates[c][draw]) for c in snrs]
        found.append(None if not np.isfinite([clean, *(w for _, w in curve)]).all() else crossing(clean, curve))
    point, draws = found[0], [b for b in found[1:] if b is not None]
    low = high = None
    if len(draws) >= n_boot / 2:  # an interval only where most resamples break down at all
        low, high = (round(float(x), 2) for x in np.percentile(draws, [2.5, 97.5]))
    clean = rates[CLEAN][0]
    return Breakdown(system=system, by=by, answers=len(counted), clean_wer=_rounded(clean),
                     threshold=_rounded(max(2 * clean, MIN_THRESHOLD)) if np.isfinite(clean) else None,
                     breakdown_snr=None if point is None else round(float(point), 2), ci95_low=low, ci95_high=high,
                     curve=[SnrWer(snr_of(c), round(float(rates[c][0]), 4)) for c in snrs
                            if np.isfinite(rates[c][0])])


def _rounded(x: float) -> float | None:
    return round(float(x), 4) if np.isfinite(x) else None
