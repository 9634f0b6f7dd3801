"""How much noise breaks a system: the breakdown SNR of a voice × engine is the SNR at which its WER first
reaches twice its clean WER, going down from clean, interpolated linearly between the measured SNRs. Twice a
clean WER of 0 is 0, so the threshold is at least MIN_THRESHOLD. The interval resamples sentences (all of a
sentence's conditions move together)."""
from __future__ import annotations

import typing
from dataclasses import dataclass

import numpy as np

from pipeline.core.records import ALIGNED, joined
from pipeline.scoring.utterances import ScoredUtterance
from pipeline.statistics import STATISTICS, Statistic


MIN_THRESHOLD = 0.02


class SnrWer(typing.NamedTuple):
    """A measured point of a WER-vs-SNR curve, written `snr:wer` (`10:0.3000`)."""
    snr: float  # dB
    wer: float

    def __format__(self, spec: str) -> str:
        return f"{self.snr:g}:{self.wer:.4f}"

    @classmethod
    def parse(cls, text: str) -> SnrWer:
        snr, wer = text.split(":")
        return cls(float(snr), float(wer))


@dataclass(frozen=True, slots=True, kw_only=True)
class Breakdown:
    voice: str
    asr: str
    clean_wer: float | None
    threshold: float | None  # twice the clean WER (at least 0.02)
    breakdown_snr: float | None  # SNR (dB) where WER first reaches the threshold, interpolated; None: never
    ci95_low: float | None  # bootstrap over sentences
    ci95_high: float | None
    curve: list[SnrWer] = joined(SnrWer.parse)  # the WER at each SNR measured, in the order of the conditions


def snr_of(condition: str) -> float | None:
    return float(condition.split("=", 1)[1]) if condition.startswith("noise:snr=") else None


def crossing(clean: float, curve: list[tuple[float, float]]) -> float | None:
    """The SNR where WER first reaches the threshold, from high SNR to low; None if it never does. When the
    highest SNR measured is already past it, that SNR is returned: the breakdown is there or above."""
    threshold = max(2 * clean, MIN_THRESHOLD)
    previous = None
    for snr, wer in sorted(curve, reverse=True):
        if wer >= threshold:
            if previous is None or wer == previous[1]:
                return snr
            s0, w0 = previous
            return s0 + (threshold - w0) * (snr - s0) / (wer - w0)
        previous = (snr, wer)
    return None


def breakdowns(utterances: list[ScoredUtterance], n_boot: int = 1000, seed: int = 1337) -> list[Breakdown]:
    systems: dict[tuple[str, str], dict[str, dict[str, tuple[int, int]]]] = {}
    for u in utterances:
        if u.status in ALIGNED and (u.condition == "clean" or snr_of(u.condition) is not None):
            systems.setdefault((u.voice, u.asr), {}).setdefault(u.condition, {})[u.sentence_id] = (u.errors, u.ref_words)
    out = []
    for (voice, engine), conditions in systems.items():
        snrs = [c for c in conditions if c != "clean"]
        if "clean" not in conditions or not snrs:
            continue
        sentences = sorted(set.intersection(*(set(conditions[c]) for c in conditions)))
        if not sentences:
            continue
        names = ["clean", *snrs]
        errors = np.array([[conditions[c][s][0] for s in sentences] for c in names], dtype=float)
        words = np.array([conditions["clean"][s][1] for s in sentences], dtype=float)
        if not words.sum():  # nothing to say in any of them: no rate to break down
            continue

        def estimate(idx: np.ndarray) -> float | None:
            total = words[idx].sum()
            if not total:
                return None
            wer = errors[:, idx].sum(axis=1) / total
            return crossing(float(wer[0]), [(snr_of(c), float(w)) for c, w in zip(snrs, wer[1:])])

        everything = np.arange(len(sentences))
        clean = float(errors[0].sum() / words.sum())
        point = estimate(everything)
        low = high = None
        if n_boot and len(sentences) > 1:
            rng = np.random.default_rng(seed)
            found = [b for b in (estimate(rng.integers(0, len(sentences), len(sentences))) for _ in range(n_boot))
                     if b is not None]
            if len(found) >= n_boot / 2:  # an interval only where most resamples break down at all
                low, high = (float(x) for x in np.percentile(found, [2.5, 97.5]))
        curve = [SnrWer(snr_of(c), round(float(errors[i + 1].sum() / words.sum()), 4)) for i, c in enumerate(snrs)]
        out.append(Breakdown(voice=voice, asr=engine, clean_wer=round(clean, 4),
                             threshold=round(max(2 * clean, MIN_THRESHOLD), 4),
                             breakdown_snr=None if point is None else round(point, 2),
                             ci95_low=None if low is None else round(low, 2),
                             ci95_high=None if high is None else round(high, 2), curve=curve))
    return out


STATISTICS.register(Statistic("breakdown", "breakdown.csv", Breakdown,
                              lambda given: breakdowns(given.scores.utterances, given.n_boot, given.seed)))
