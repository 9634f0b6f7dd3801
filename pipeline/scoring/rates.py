"""Corpus figures: micro and macro WER, a bootstrap confidence interval, Spearman's rank correlation."""
from __future__ import annotations

import collections
import math
import os
from concurrent.futures import ThreadPoolExecutor
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
    macro_low: float | None = None  # the same resamples' interval of the macro WER
    macro_high: float | None = None


def corpus_wer(errors: list[int], ref_words: list[int], n_boot: int = 1000, seed: int = 1337) -> CorpusWER:
    """An utterance with no reference word counts its errors (insertions) in the micro rate, as sclite and jiwer
    count them, and has no rate of its own: the macro leaves it out."""
    return corpus_rates([(errors, ref_words)], n_boot, seed)[0]


def corpus_rates(counts: list[tuple[list[int], list[int]]], n_boot: int = 1000, seed: int = 1337,
                 macro: set[int] | None = None) -> list[CorpusWER]:
    """corpus_wer of several (errors, totals) of the same utterances (words and characters), from one set of
    bootstrap draws: each rate's interval is what corpus_wer alone gives with the same seed. `macro`: the rates
    (by index) whose macro WER gets an interval too; all when None."""
    arrays = [(_numbers(e), _numbers(n)) for e, n in counts]
    length = len(arrays[0][0])
    rated = [i for i, (e, n) in enumerate(arrays) if len(e) and n.sum() > 0]
    samples: dict[int, list[np.ndarray]] = {i: [] for i in rated}
    means: dict[int, list[np.ndarray]] = {i: [] for i in rated}
    rates = {i: arrays[i][0] / np.where(arrays[i][1] == 0, np.nan, arrays[i][1]) for i in rated}
    # with no empty total there is no NaN to leave out, and a plain mean is nanmean to the bit, at an eighth of its cost
    mean = {i: np.mean if not np.isnan(rates[i]).any() else rated_mean for i in rated}
    sums = {i: summed(*arrays[i], length) for i in rated}

    def figures(drawn: np.ndarray) -> list[tuple[np.ndarray, np.ndarray | None]]:
        """A block of resamples' micro rates, and macro rates where they are asked for, for each rate."""
        out = []
        for i in rated:
            errors, totals = sums[i](drawn)
            micro = errors / np.where(totals == 0, np.nan, totals)
            out.append((micro, mean[i](rates[i][drawn], axis=1) if macro is None or i in macro else None))
        return out

    if n_boot and length > 1 and rated:
        for block in in_order(figures, resamples(length, n_boot, seed)):
            for i, (micro, macro_rates) in zip(rated, block):
                samples[i].append(micro)
                if macro_rates is not None:
                    means[i].append(macro_rates)
    out = []
    for i, (e, n) in enumerate(arrays):
        if i not in samples:
            out.append(CorpusWER(len(e), int(n.sum()), int(e.sum()), None, None, None, None))
            continue
        low = high = macro_low = macro_high = None
        if samples[i]:
            low, high = (float(x) for x in np.nanpercentile(np.concatenate(samples[i]), [2.5, 97.5]))
        if means[i]:
            macro_low, macro_high = (float(x) for x in np.nanpercentile(np.concatenate(means[i]), [2.5, 97.5]))
        out.append(CorpusWER(len(e), int(n.sum()), int(e.sum()), float(e.sum() / n.sum()),
                             float(np.nanmean(rates[i])), low, high, macro_low, macro_high))
    return out


def rated_mean(rates: np.ndarray, axis: int) -> np.ndarray:
    """nanmean, to the bit (the NaNs as zeros summed, over the count of the others), without its warning on a
    resample drawn wholly from utterances with no rate (no reference word): that resample's macro is NaN, which
    the percentiles leave out."""
    kept = ~np.isnan(rates)
    counts = kept.sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(kept, rates, 0.0).sum(axis=axis) / counts


def _numbers(x) -> np.ndarray:
    """Counts as an array: a typed array of whole numbers (scoring's tallies) as it is, without a copy; else float."""
    out = np.asarray(x)
    return out if out.dtype.kind in "iu" else out.astype(float)


def summed(e: np.ndarray, n: np.ndarray, length: int):
    """A function of a block of resamples' indices: each resample's Σ e and Σ n, as floats. Counts are whole
    numbers, whose sums are exact in any order; where every resample's sums fit, e and n are one int64 (e in the
    high 32 bits), so a resample's two sums are one gather and one sum."""
    whole = all(x.dtype.kind in "iu" or bool(np.all(x == np.floor(x))) for x in (e, n)) and min(e.min(), n.min()) >= 0
    if whole and e.max() * length < 1 << 31 and n.max() * length < 1 << 32:
        packed = (e.astype(np.int64) << 32) | n.astype(np.int64)

        def one_gather(drawn: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            s = packed[drawn].sum(axis=1)
            return (s >> 32).astype(float), (s & 0xFFFFFFFF).astype(float)
        return one_gather

    def two_gathers(drawn: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return e[drawn].sum(axis=1), n[drawn].sum(axis=1)
    return two_gathers


BOOTSTRAP_BLOCK = 1 << 17  # resampled indices held at once: 512 KB as uint32, whatever the number of utterances


def resamples(length: int, n_boot: int, seed: int):
    """Bootstrap index draws, a block of resamples at a time: the generator yields the same indices in blocks as
    in one (n_boot, length) draw, so an interval does not depend on the block size, and 100,000 utterances need
    half a megabyte at a time (a resample or two) instead of 2.4 GB. Below 2^32 utterances they are drawn as uint32,
    the same numbers from the same stream as numpy's default int64 (both take Lemire's bounded draw from 32-bit
    halves; tests/test_scoring.py checks) at a third of the cost, and index as they are."""
    rng = np.random.default_rng(seed)
    per_block = max(1, BOOTSTRAP_BLOCK // length)
    dtype = np.uint32 if length <= 1 << 32 else np.int64
    for start in range(0, n_boot, per_block):
        yield rng.integers(0, length, size=(min(per_block, n_boot - start), length), dtype=dtype)


BOOTSTRAP_THREADS = min(os.cpu_count() or 1, 4)


def in_order(fn, blocks):
    """fn of each block, in the blocks' order, on BOOTSTRAP_THREADS threads (numpy's gathers and sums let go of the
    GIL), with at most that many blocks drawn ahead: the draws come one after another from one generator, so every
    block, and every figure, is what one thread computes."""
    with ThreadPoolExecutor(BOOTSTRAP_THREADS) as pool:
        pending: collections.deque = collections.deque()
        for block in blocks:
            pending.append(pool.submit(fn, block))
            if len(pending) >= BOOTSTRAP_THREADS:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


@dataclass
class Correlation:
    n: int
    rho: float | None
    p: float | None


def ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks, ties sharing their mean rank (scipy.stats.rankdata's default)."""
    order = np.argsort(x, kind="mergesort")
    sorted_x = x[order]
    starts = np.flatnonzero(np.r_[True, sorted_x[1:] != sorted_x[:-1]])
    ends = np.r_[starts[1:], len(x)]
    out = np.empty(len(x))
    out[order] = np.repeat((starts + ends + 1) / 2, ends - starts)
    return out


def spearman(x: list[float], y: list[float]) -> Correlation:
    """Spearman's ρ with its two-sided p-value, as scipy.stats.spearmanr computes them (the Pearson correlation
    of the ranks; Student t with n − 2 degrees of freedom), without importing scipy.stats, which alone takes
    longer than scoring 10,000 utterances. None where it is undefined (n < 3 or a constant input)."""
    pairs = [(a, b) for a, b in zip(x, y) if a is not None and b is not None
             and not (isinstance(a, float) and math.isnan(a))]
    if len(pairs) < 3:
        return Correlation(len(pairs), None, None)
    xs, ys = zip(*pairs)
    if len(set(xs)) < 2 or len(set(ys)) < 2:
        return Correlation(len(pairs), None, None)
    rx, ry = ranks(np.asarray(xs, dtype=float)), ranks(np.asarray(ys, dtype=float))
    rho = float(np.clip(np.corrcoef(rx, ry)[0, 1], -1.0, 1.0))
    df = len(pairs) - 2
    if abs(rho) == 1.0:
        return Correlation(len(pairs), rho, 0.0)
    t = rho * math.sqrt(df / ((1.0 - rho) * (1.0 + rho)))
    from scipy.special import stdtr  # only here: 25 MB and a tenth of a second that a score without an LM never needs

    return Correlation(len(pairs), rho, float(2 * stdtr(df, -abs(t))))
