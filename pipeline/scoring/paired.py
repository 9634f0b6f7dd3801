"""Paired significance tests between two systems scored on the same sentences, as NIST sc_stats defines them
(tests/test_paired.py runs sc_stats on the same trn files), and a paired bootstrap of the difference in WER.

- MAPSSWE (matched-pair sentence-segment word error): each sentence is cut into segments bounded by at least
  two consecutive reference words that both systems got right; a segment's statistic is system A's errors minus
  system B's; Z = mean / (sd / √n) over segments. sc_stats reads Z against the normal distribution; here the
  p-value is two-sided Student t with n − 1 degrees of freedom, the same for many segments and honest for a
  few (a run of four sentences gave p = 3e-17 under the normal). When every segment differs alike (sd = 0),
  p is the exact sign test over the segments.
- Sign test on the per-sentence word error rate (%): ties (within 0.005) are split half to each side, an odd
  one to the side that makes the difference smaller; p is the exact two-sided binomial at every size. sc_stats
  (sctk 2.4.10, statdist.c) switches to a normal approximation without continuity correction above 20 blocks:
  on 24 sentences it gave p = 0.001 where the exact test gives 0.15.
- Wilcoxon signed-rank on the per-sentence word error rate (%): zero differences are ranked too, and
  Z = (min(W+, W−) − n(n+1)/4) / √(n(n+1)(2n+1)/24), two-sided normal p. The zeros' ranks are split half to
  each side here (scipy's zero_method="zsplit"); the sctk 2.4.10 build hands them alternately to + and −, so
  the rank sums can differ where there are zeros. Without zero differences the two agree. These three are kept as
  sc_stats computes them, so that the comparisons CSVs equal it; no decision of the tool rests on the normal
  approximation.
- Exact signed-rank (`signed_rank`), what the release gate and the listening analysis decide with: zeros dropped
  (Wilcoxon's rule), ties given midranks, and p the two-sided tail of the exact distribution of W+ over every sign
  flip, for up to EXACT_UP_TO pairs (beyond that the normal approximation, with the tie correction, is exact to
  well under 1e-3). With n pairs, the smallest p it can give is 2 / 2ⁿ (`smallest_p`): 10 sentences never go below
  0.00195.
- The paired mean over listeners and sentences (`two_way`): a vote's weight in a bootstrap draw is its listener's
  count times its sentence's, so the interval holds for other listeners and other sentences.

Student's t and the normal are the special functions scipy.stats' distributions call (t.sf is stdtr(df, −x),
t.ppf is stdtrit(df, q), norm.sf is ndtr(−x)), and the ranks are rates.ranks, scipy's rankdata: every run
compares, and importing scipy.stats would cost each run half a second. The figures are the same doubles
(tests/test_paired.py)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from pipeline.scoring import rates
from pipeline.scoring.align import HIT, INSERTION, OPS, OPTIONAL_DELETION, OPTIONAL_INSERTION

ALPHA = 0.05  # the one significance level every verdict, gate and highlight of the tool uses
BOUNDARY_WORDS = 2  # sc_stats' "Minimum Number of Correct Boundary words"
TIE = 0.005  # sc_stats' threshold for equal percentages


def _normal_p(z: float) -> float:
    return math.erfc(abs(z) / math.sqrt(2))


Marks = tuple[list[bool], list[int]]  # what MAPSSWE reads of an alignment: marks()
RECOGNIZED = tuple(code in (HIT, OPTIONAL_DELETION) for code in range(len(OPS)))  # by op code


def marks(codes: bytes) -> Marks:
    """Whether each reference word was recognized, and the insertions before each word (and after the last), from an
    alignment's op codes (align.py). A hypothesis' optional word over nothing (sclite -D) is neither: its words
    would not pair with another system's; a reference's optional word over nothing is recognized."""
    if INSERTION not in codes and OPTIONAL_INSERTION not in codes:  # most sentences: a mark per code
        return list(map(RECOGNIZED.__getitem__, codes)), [0] * (len(codes) + 1)
    correct, inserted = [], [0]
    for c in codes:
        if c == INSERTION:
            inserted[-1] += 1
        elif c != OPTIONAL_INSERTION:
            correct.append(RECOGNIZED[c])
            inserted.append(0)
    return correct, inserted


def segments(a: Marks, b: Marks, boundary: int = BOUNDARY_WORDS) -> list[tuple[int, int]]:
    """(errors of A, errors of B) per segment of one sentence that holds an error of either system. Where the two
    heard the reference said in different ways (a trn reference's alternations: `{ the / a b }`), its words do not
    pair, and the sentence is one segment."""
    (ca, ia), (cb, ib) = a, b
    if len(ca) != len(cb):
        errors = (ca.count(False) + sum(ia), cb.count(False) + sum(ib))
        return [errors] if any(errors) else []
    out, current, run = [], None, 0
    for i in range(len(ca) + 1):
        if ia[i] or ib[i]:
            current = [(current or [0, 0])[0] + ia[i], (current or [0, 0])[1] + ib[i]]
            run = 0
        if i == len(ca):
            break
        if ca[i] and cb[i]:
            run += 1
            if run >= boundary and current is not None:
                out.append(tuple(current))
                current = None
        else:
            run = 0
            current = [(current or [0, 0])[0] + (not ca[i]), (current or [0, 0])[1] + (not cb[i])]
    if current is not None:
        out.append(tuple(current))
    return out


@dataclass(frozen=True)
class MAPSSWE:
    segments: int
    mean: float | None  # of A's errors minus B's, per segment
    sd: float | None
    z: float | None
    p: float


def mapsswe(pairs: Iterable[tuple[bytes, bytes]]) -> MAPSSWE:
    """MAPSSWE of the sentences' two alignments, each as its op codes (align.py)."""
    return marked_mapsswe((marks(a), marks(b)) for a, b in pairs)


def marked_mapsswe(pairs: Iterable[tuple[Marks, Marks]]) -> MAPSSWE:
    """mapsswe of the sentences' marks, where they are made once for several comparisons."""
    diffs = [ea - eb for a, b in pairs for ea, eb in segments(a, b)]
    if len(diffs) < 2:
        return MAPSSWE(len(diffs), None, None, None, 1.0)
    d = np.asarray(diffs, dtype=float)
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    if sd == 0:  # every segment differs alike: Z is infinite; the exact sign test on the segments is the p-value
        return MAPSSWE(len(d), mean, sd, None, 1.0 if mean == 0 else min(1.0, 2 * 0.5 ** len(d)))
    from scipy.special import stdtr

    z = mean / (sd / math.sqrt(len(d)))
    return MAPSSWE(len(d), mean, sd, z, float(2 * stdtr(len(d) - 1, -abs(z))))


@dataclass(frozen=True)
class Sign:
    positive: int  # sentences where A's WER is higher, before ties are split
    negative: int
    ties: int
    p: float


def sign_test(wer_a: list[float], wer_b: list[float]) -> Sign:
    """wer_a, wer_b: per-sentence word error rate in percent."""
    diffs = [x - y for x, y in zip(wer_a, wer_b)]
    pos = sum(1 for d in diffs if d > TIE)
    neg = sum(1 for d in diffs if d < -TIE)
    ties = len(diffs) - pos - neg
    n = len(diffs)
    if n == 0:
        return Sign(0, 0, 0, 1.0)
    low = min(pos + ties // 2, neg + ties - ties // 2)
    return Sign(pos, neg, ties, min(1.0, 2 * binomial_tail(n, low) / 2 ** n))


def binomial_tail(n: int, k: int) -> int:
    """C(n, 0) + … + C(n, k), exactly, each term from the one before: math.comb computes each anew, at a cost that
    grows with n × k, which a corpus of tens of thousands of sentences turns into minutes."""
    term = total = 1
    for i in range(k):
        term = term * (n - i) // (i + 1)
        total += term
    return total


@dataclass(frozen=True)
class Wilcoxon:
    w_plus: float  # rank sums, the zeros' ranks split between them
    w_minus: float
    zero_ranks: float  # the ranks of the zero differences, summed
    z: float | None
    p: float


def wilcoxon(wer_a: list[float], wer_b: list[float]) -> Wilcoxon:
    diffs = np.round(np.asarray([x - y for x, y in zip(wer_a, wer_b)], dtype=float), 6)
    n = len(diffs)
    if n == 0:
        return Wilcoxon(0.0, 0.0, 0.0, None, 1.0)
    ranks = rates.ranks(np.abs(diffs))
    zero = float(ranks[diffs == 0].sum())
    w_plus, w_minus = float(ranks[diffs > 0].sum()) + zero / 2, float(ranks[diffs < 0].sum()) + zero / 2
    z = (min(w_plus, w_minus) - n * (n + 1) / 4) / math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
    return Wilcoxon(w_plus, w_minus, zero, z, _normal_p(z))


EXACT_UP_TO = 400  # pairs: the exact distribution has 2·n(n+1)/2 + 1 points, a numpy shift-and-add each


@dataclass(frozen=True)
class SignedRank:
    n: int  # pairs with a non-zero difference
    w_plus: float  # the rank sum of the positive differences
    p: float  # two-sided
    exact: bool

    @property
    def test(self) -> str:
        return "Wilcoxon signed-rank, exact" if self.exact else "Wilcoxon signed-rank, normal (n > 400)"


def signed_rank(differences: list[float]) -> SignedRank:
    """The exact Wilcoxon signed-rank test of paired differences (B − A), as scipy's method="exact" with
    zero_method="wilcox" where there are no ties; with ties, the exact permutation distribution of the midranks."""
    from scipy.special import ndtr

    d = np.round(np.asarray([x for x in differences if x is not None], dtype=float), 9)
    d = d[d != 0]
    n = len(d)
    if n == 0:
        return SignedRank(0, 0.0, 1.0, True)
    doubled = np.rint(2 * rates.ranks(np.abs(d))).astype(np.int64)  # midranks are halves: twice them are integers
    w = int(doubled[d > 0].sum())
    total = int(doubled.sum())
    if n > EXACT_UP_TO:
        z = (w - total / 2) / math.sqrt(float((doubled.astype(float) ** 2).sum()))
        return SignedRank(n, w / 2, min(1.0, float(2 * ndtr(-abs(z)))), False)
    dist = np.zeros(total + 1)
    dist[0] = 1.0
    for r in doubled:  # each rank is added or not, with probability ½ each
        shifted = np.zeros_like(dist)
        shifted[r:] = dist[:-r]
        dist = 0.5 * (dist + shifted)
    low, high = dist[:w + 1].sum(), dist[w:].sum()
    return SignedRank(n, w / 2, min(1.0, float(2 * min(low, high))), True)


def smallest_p(n: int) -> float:
    """The smallest two-sided p the exact signed-rank test can give with n pairs: every difference one way."""
    return min(1.0, 2 * 0.5 ** n) if n else 1.0


@dataclass(frozen=True)
class TwoWay:
    mean: float | None
    low: float | None
    high: float | None


def resampled_counts(listeners: int, items: int, n_boot: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(n_boot, listeners) and (n_boot, items): how many times each listener and each item is drawn, with
    replacement, in each resample; kept apart for what resamples the items alone (an engine's errors)."""
    rng = np.random.default_rng(seed)
    return (np.stack([np.bincount(rng.integers(0, listeners, listeners), minlength=listeners) for _ in range(n_boot)]),
            np.stack([np.bincount(rng.integers(0, items, items), minlength=items) for _ in range(n_boot)]))


def resampled_weights(listeners: np.ndarray, items: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, votes): how many times each vote is drawn when listeners and items are resampled together, each
    with replacement: a vote counts as often as its listener times its item."""
    wl, wi = resampled_counts(listeners.max() + 1, items.max() + 1, n_boot, seed)
    return wl[:, listeners] * wi[:, items]


def two_way(values: list[float], listeners: list, items: list, n_boot: int, seed: int) -> TwoWay:
    """The mean of votes with a 95% interval that resamples listeners and items (sentences) together."""
    if not values:
        return TwoWay(None, None, None)
    x = np.asarray(values, dtype=float)
    weights = resampled_weights(_codes(listeners), _codes(items), n_boot, seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        draws = (weights * x).sum(axis=1) / weights.sum(axis=1)
    draws = draws[np.isfinite(draws)]
    low, high = (float(v) for v in np.percentile(draws, [2.5, 97.5])) if len(draws) else (None, None)
    return TwoWay(float(x.mean()), low, high)


def unanimous(found: TwoWay, values: list[float], floor: float, ceiling: float, units: int) -> TwoWay:
    """A panel whose votes are all one answer leaves a bootstrap nothing to resample: its interval is a point. Its
    honest interval is the exact binomial (Clopper-Pearson) one of the mean put on [0, 1] between the scale's ends,
    as if from `units` independent votes (the fewer of listeners and sentences: what the panel really sampled).
    Anything else is left as it is."""
    from scipy.stats import beta

    if found.mean is None or len(set(values)) > 1 or units < 1 or ceiling <= floor:
        return found
    share = (found.mean - floor) / (ceiling - floor)
    k = share * units
    low = float(beta.ppf(0.025, k, units - k + 1)) if k > 0 else 0.0
    high = float(beta.ppf(0.975, k + 1, units - k)) if k < units else 1.0
    return TwoWay(found.mean, floor + low * (ceiling - floor), floor + high * (ceiling - floor))


def _codes(values: list) -> np.ndarray:
    at = {v: i for i, v in enumerate(sorted(set(values)))}
    return np.array([at[v] for v in values])


def holm(p_values: list[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the input's order."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted, running = [0.0] * len(p_values), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def paired_bootstrap(errors_a: list[int], errors_b: list[int], words: list[int], n_boot: int,
                     seed: int) -> tuple[float | None, float | None, float | None]:
    """Δ = (Σ errors of B − Σ errors of A) / Σ reference words, with a 95% interval from resampling sentences
    (a sentence's rows move together)."""
    ea, eb, n = (np.asarray(x, dtype=float) for x in (errors_a, errors_b, words))
    if len(n) == 0 or n.sum() == 0:
        return None, None, None
    delta = float((eb.sum() - ea.sum()) / n.sum())
    if not n_boot or len(n) < 2:
        return delta, None, None

    def block(drawn: np.ndarray) -> np.ndarray:
        sums = n[drawn].sum(axis=1)
        return (eb[drawn].sum(axis=1) - ea[drawn].sum(axis=1)) / np.where(sums == 0, np.nan, sums)
    # a block of resamples at a time, the indices one (n_boot, len) draw gives: with 100,000 sentences the whole
    # draw and its gathers held 2.4 GB
    deltas = np.concatenate(list(rates.in_order(block, rates.resamples(len(n), n_boot, seed))))
    low, high = (float(x) for x in np.nanpercentile(deltas, [2.5, 97.5]))
    return delta, low, high


POWER = 0.8  # the chance of detecting a difference that the power figures are for


@dataclass(frozen=True)
class Power:
    detectable: float | None  # the smallest |Δ| these sentences detect with POWER at ALPHA (a paired t-test)
    needed: int | None  # sentences it takes to detect the observed Δ so; None when Δ is 0
    floor: float = 0.0  # the smallest p the test can give here, corrected (within_reach): at ALPHA or above, no Δ


def power(contributions: list[float], delta: float | None, alpha: float = ALPHA, chance: float = POWER) -> Power:
    """What a paired comparison of this many sentences can detect, from the paired variance.

    `contributions`: each sentence's part of Δ, so that Δ is their mean and their standard deviation s is the
    paired spread (for a difference of means, the per-sentence difference; for a pooled rate Σd / Σn, the
    linearized (dᵢ − Δ nᵢ) / n̄). With n sentences the standard error is s / √n, and a two-sided test at alpha
    detects |Δ| ≥ (t(1 − alpha/2, n − 1) + t(chance, n − 1)) · s / √n with probability `chance`; the
    sentences needed for the observed Δ solve the same equation for n. docs/statistics.md checks both by
    simulation."""
    from scipy.special import stdtrit

    n = len(contributions)
    if n < 2:
        return Power(None, None)
    s = float(np.std(contributions, ddof=1))
    if s == 0:
        return Power(0.0 if delta else None, n if delta else None)

    def reach(k: int) -> float:
        return float(stdtrit(k - 1, 1 - alpha / 2) + stdtrit(k - 1, chance))

    detectable = reach(n) * s / math.sqrt(n)
    if not delta:
        return Power(detectable, None)
    needed = max(2, math.ceil((reach(n) * s / delta) ** 2))
    for _ in range(50):  # the t quantiles depend on n itself: iterate to the fixed point
        again = max(2, math.ceil((reach(needed) * s / delta) ** 2))
        if again == needed:
            break
        needed = again
    return Power(detectable, needed)


def within_reach(powers: list[Power], floors: list[float], alpha: float = ALPHA) -> list[Power]:
    """Each test's power among Holm-corrected tests whose own smallest p are `floors` (smallest_p of the sentences
    for an exact test, 0 for one without a floor). Holm's correction only grows with each p, so test k cannot go
    below holm(floors)[k] however large Δ is: where that is at least alpha no Δ is detectable here, and any Δ needs
    at least the sentences that bring it under alpha, the other tests held as they are."""
    corrected = holm(floors)

    def reaches(k: int, n: int) -> bool:
        return holm([*floors[:k], smallest_p(n), *floors[k + 1:]])[k] < alpha

    out = []
    for k, (found, floor) in enumerate(zip(powers, corrected)):
        needed = found.needed
        if floors[k] > 0 and needed and not reaches(k, needed):
            low, high = needed, math.ceil(math.log2(2 * len(floors) / alpha)) + 1  # at high every test reaches
            while high - low > 1:
                low, high = (low, (low + high) // 2) if reaches(k, (low + high) // 2) else ((low + high) // 2, high)
            needed = high
        out.append(Power(found.detectable if floor < alpha else None, needed, floor))
    return out


def pooled_contributions(errors_a: list[int], errors_b: list[int], words: list[int]) -> list[float]:
    """Each sentence's linearized part of Δ = (Σ eB − Σ eA) / Σ n: ((eBᵢ − eAᵢ) − Δ nᵢ) / n̄ + Δ, whose mean is Δ
    and whose spread is the pooled rate's."""
    d = np.asarray(errors_b, dtype=float) - np.asarray(errors_a, dtype=float)
    n = np.asarray(words, dtype=float)
    if not len(n) or n.sum() == 0:
        return []
    delta = d.sum() / n.sum()
    return list((d - delta * n) / n.mean() + delta)
