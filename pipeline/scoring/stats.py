"""Corpus figures: micro and macro WER, a bootstrap confidence interval, Spearman's rank correlation."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass
class CorpusWER:
    n_utterances: int
    ref_words: int
    errors: int
    micro_wer: float | None  # Σ errors / Σ N, as sclite reports
    macro_wer: float | None  # mean of per-utterance WER, as seed-tts-eval reports
    ci_low: float | None  # bootstrap 95% interval of the micro WER, resampling utterances
    ci_high: float | None


def corpus_wer(errors: list[int], ref_words: list[int], n_boot: int = 1000, seed: int = 1337) -> CorpusWER:
    """Utterances with an empty reference must be left out by the caller: they have no rate."""
    e, n = np.asarray(errors, dtype=float), np.asarray(ref_words, dtype=float)
    if len(e) == 0 or n.sum() == 0:
        return CorpusWER(len(e), int(n.sum()), int(e.sum()), None, None, None, None)
    micro = e.sum() / n.sum()
    macro = float(np.mean(e / n))
    low = high = None
    if n_boot and len(e) > 1:
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, len(e), size=(n_boot, len(e)))
        sums = n[idx].sum(axis=1)
        rates = e[idx].sum(axis=1) / np.where(sums == 0, np.nan, sums)
        low, high = (float(x) for x in np.nanpercentile(rates, [2.5, 97.5]))
    return CorpusWER(len(e), int(n.sum()), int(e.sum()), float(micro), macro, low, high)


@dataclass
class Correlation:
    n: int
    rho: float | None
    p: float | None


def spearman(x: list[float], y: list[float]) -> Correlation:
    """Spearman's ρ with its two-sided p-value; None where it is undefined (n < 3 or a constant input)."""
    from scipy.stats import spearmanr

    pairs = [(a, b) for a, b in zip(x, y) if a is not None and b is not None
             and not (isinstance(a, float) and math.isnan(a))]
    if len(pairs) < 3:
        return Correlation(len(pairs), None, None)
    xs, ys = zip(*pairs)
    if len(set(xs)) < 2 or len(set(ys)) < 2:
        return Correlation(len(pairs), None, None)
    result = spearmanr(xs, ys)
    return Correlation(len(pairs), float(result.statistic), float(result.pvalue))
