"""Every two groups (voice × engine × condition) that share sentences, compared on those sentences: ΔWER with a
paired bootstrap interval, ΔCER, MAPSSWE, sign and Wilcoxon tests (scoring/paired.py), Holm-corrected over all
the pairs that answer one question, and a one-line verdict.

The correction family is the pairs that differ in one factor only (two voices under the same engine and condition,
two engines on the same voice and condition, two conditions of the same voice and engine): those are the questions
users ask. Pairs that differ in two or three factors stay in comparisons.csv, marked `cross-factor` and corrected
among themselves, so that they neither dilute nor borrow from the one-factor family."""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Callable

from pipeline.core.records import ALIGNED, Group, grouped
from pipeline.io.conditions import SILENCE
from pipeline.scoring import paired
from pipeline.scoring.paired import ALPHA
from pipeline.scoring.utterances import Results, ScoredUtterance
from pipeline.statistics import STATISTICS, Statistic




FACTORS = ("voice", "asr", "condition")
ONE_FACTOR, CROSS_FACTOR = "one-factor", "cross-factor"


@dataclass(frozen=True, slots=True, kw_only=True)
class Comparison:
    """Two groups (voice × engine × condition) scored on the same sentences: B against A."""
    a: Group = grouped()  # voice | asr | condition
    b: Group = grouped()
    sentences: int  # shared sentences, both scored
    wer_a: float | None
    wer_b: float | None
    delta_wer: float | None  # wer_b − wer_a, pooled over the shared sentences
    delta_ci95_low: float | None  # paired bootstrap, resampling sentences
    delta_ci95_high: float | None
    cer_a: float | None
    cer_b: float | None
    delta_cer: float | None
    mapsswe_segments: int
    mapsswe_z: float | None  # A's errors minus B's per segment: negative when A has fewer
    mapsswe_p: float
    mapsswe_p_holm: float  # Holm-corrected within its holm_family
    sign_b_worse: int  # sentences where B's WER is higher
    sign_b_better: int
    sign_ties: int
    sign_p: float
    sign_p_holm: float
    wilcoxon_z: float | None
    wilcoxon_p: float
    wilcoxon_p_holm: float
    verdict: str  # one line, by MAPSSWE after Holm at 0.05
    differs: str  # the factors in which A and B differ: voice, asr, condition, or several joined by +
    holm_family: str  # one-factor (the family Holm corrects over) or cross-factor (outside it: corrected apart)
    detectable_delta: float | None = None  # the smallest |Δ| these sentences detect with 80% power at α 0.05 (a
    # paired t-test on the per-sentence differences; docs/statistics.md)
    sentences_needed: int | None = None  # sentences it would take to detect the observed Δ so; empty when Δ is 0


def differs(a: Group, b: Group) -> str:
    """The factors in which two groups differ: 'voice', 'asr+condition', …"""
    return "+".join(name for name, x, y in zip(FACTORS, a, b) if x != y)


def family(a: Group, b: Group) -> str:
    return ONE_FACTOR if "+" not in differs(a, b) else CROSS_FACTOR


def per_family(pairs: list[tuple[Group, Group]], values: list, within) -> list:
    """`within` (a list of a family's values → as many results) applied to each pair's Holm family, in order."""
    out = list(values)
    for name in (ONE_FACTOR, CROSS_FACTOR):
        members = [i for i, (a, b) in enumerate(pairs) if family(a, b) == name]
        for i, q in zip(members, within([values[i] for i in members])):
            out[i] = q
    return out


def corrected(pairs: list[tuple[Group, Group]], p: list[float]) -> list[float]:
    """The p-values of these pairs Holm-corrected within each pair's family, in their order."""
    return per_family(pairs, p, paired.holm)


def exact_reach(pairs: list[tuple[Group, Group]], powers: list[paired.Power],
                sentences: list[int]) -> list[paired.Power]:
    """Each pair's power where its exact signed-rank test, Holm-corrected within its family, has a floor
    (paired.within_reach)."""
    return per_family(pairs, list(zip(powers, sentences)), lambda family_of: paired.within_reach(
        [power for power, _ in family_of], [paired.smallest_p(n) for _, n in family_of]))


def significant_digits(p: float) -> float:
    """A p-value as the tables keep it: 4 significant digits."""
    return float(f"{p:.4g}")


def short(a: Group, b: Group) -> tuple[str, str]:
    """The parts that tell two groups apart: 'flite:slt' vs 'piper:joe' when only the voice differs."""
    keep = [i for i in range(3) if a[i] != b[i]]
    return " ".join(a[i] or "-" for i in keep), " ".join(b[i] or "-" for i in keep)


def _rate(errors: int, words: int) -> float | None:
    return errors / words if words else None


def rounded(x: float | None, digits: int = 4) -> float | None:
    """A figure as the tables keep it (numpy's scalars as Python floats)."""
    return None if x is None else round(float(x), digits)


def undetected(sentences: int, delta: float | None, power: paired.Power, digits: int = 3) -> str:
    """What a comparison that found no difference could have found (paired.power), in words; "" when nothing can
    be said."""
    if power.floor >= ALPHA:
        note = (f"; with {sentences} sentences its p cannot go below {power.floor:.3g} (the exact test's least, "
                "Holm-corrected), so no Δ could be found")
    elif power.detectable is None:
        return ""
    else:
        note = (f"; {sentences} sentences detect |Δ| ≥ {power.detectable:.{digits}f} ({paired.POWER:.0%} power, "
                f"α {ALPHA})")
    return note + (f", Δ = {delta:+.{digits}f} would take about {power.needed}" if power.needed and delta else "")


def verdict(a: Group, b: Group, delta: float | None, low: float | None, high: float | None, p: float,
            power_note: str = "") -> str:
    name_a, name_b = short(a, b)
    shared = ", ".join(a[i] for i in range(3) if a[i] == b[i] and a[i])
    context = f"{shared}: " if shared else ""
    if delta is None:
        return f"{context}{name_a} and {name_b} share no scored words"
    interval = f" [{low:+.3f}, {high:+.3f}]" if low is not None else ""
    figures = f"Δ = {delta:+.3f}{interval}, p = {p:.3g}"
    if p < ALPHA and delta != 0:
        return f"{context}{name_b} has {'more' if delta > 0 else 'fewer'} errors than {name_a}, {figures}"
    return f"{context}no significant difference between {name_a} and {name_b}, {figures}{power_note}"


@dataclass(frozen=True)
class _Paired:
    """What one pair of groups gives before the correction over its family."""
    a: Group
    b: Group
    sentences: int
    wer_a: float | None
    wer_b: float | None
    delta: tuple[float | None, float | None, float | None]  # ΔWER and its interval
    cer_a: float | None
    cer_b: float | None
    mapsswe: paired.MAPSSWE
    sign: paired.Sign
    wilcoxon: paired.Wilcoxon
    power: paired.Power


def _paired(marked: Callable[[ScoredUtterance], paired.Marks], a: Group, b: Group, ua: list[ScoredUtterance],
            ub: list[ScoredUtterance], n_boot: int, seed: int) -> _Paired:
    words = [u.ref_words for u in ua]
    ea, eb = [u.errors for u in ua], [u.errors for u in ub]
    delta = paired.paired_bootstrap(ea, eb, words, n_boot, seed)
    chars = sum(u.ref_chars or 0 for u in ua)
    pa, pb = per_sentence(ua, ub)
    return _Paired(a=a, b=b, sentences=len(ua), wer_a=_rate(sum(ea), sum(words)), wer_b=_rate(sum(eb), sum(words)),
                   delta=delta, cer_a=_rate(sum(u.char_errors or 0 for u in ua), chars),
                   cer_b=_rate(sum(u.char_errors or 0 for u in ub), chars),
                   mapsswe=paired.marked_mapsswe((marked(x), marked(y)) for x, y in zip(ua, ub)),
                   sign=paired.sign_test(pb, pa), wilcoxon=paired.wilcoxon(pb, pa),
                   power=paired.power(paired.pooled_contributions(ea, eb, words), delta[0], ALPHA))


def per_sentence(ua: list[ScoredUtterance], ub: list[ScoredUtterance]) -> tuple[list[float], list[float]]:
    """The two sides' WER (%) of each sentence that has one (a reference word or more), for the tests over
    per-sentence rates (sign, Wilcoxon); a sentence with an empty reference counts in the pooled figures alone."""
    rated = [(x.wer, y.wer) for x, y in zip(ua, ub) if x.wer is not None and y.wer is not None]
    return [100 * x for x, _ in rated], [100 * y for _, y in rated]


def compare(scores: Results, n_boot: int = 1000, seed: int = 1337) -> list[Comparison]:
    groups: dict[Group, dict[str, ScoredUtterance]] = {}
    for u in scores.utterances:
        if u.status in ALIGNED and u.condition != SILENCE:
            groups.setdefault(u.group, {})[u.sentence_id] = u
    marks: dict[str, paired.Marks] = {}  # each utterance's, made once for every pair it is in

    def marked(u: ScoredUtterance) -> paired.Marks:
        if len(groups) < 3:  # one pair: each utterance is read once, and its marks need not outlive its segments
            return paired.marks(scores.codes(u))
        found = marks.get(u.id)
        if found is None:
            found = marks[u.id] = paired.marks(scores.codes(u))
        return found
    found = []
    for a, b in combinations(groups, 2):
        shared = [s for s in groups[a] if s in groups[b]]
        if shared:
            found.append(_paired(marked, a, b, [groups[a][s] for s in shared], [groups[b][s] for s in shared],
                                 n_boot, seed))
    pairs = [(f.a, f.b) for f in found]
    holm = {test: corrected(pairs, [getattr(f, test).p for f in found]) for test in ("mapsswe", "sign", "wilcoxon")}
    out = []
    for i, f in enumerate(found):
        delta, low, high = (rounded(x) for x in f.delta)
        delta_cer = f.cer_b - f.cer_a if f.cer_a is not None and f.cer_b is not None else None
        out.append(Comparison(
            a=f.a, b=f.b, sentences=f.sentences, wer_a=rounded(f.wer_a), wer_b=rounded(f.wer_b), delta_wer=delta,
            delta_ci95_low=low, delta_ci95_high=high, cer_a=rounded(f.cer_a), cer_b=rounded(f.cer_b),
            delta_cer=rounded(delta_cer), mapsswe_segments=f.mapsswe.segments, mapsswe_z=rounded(f.mapsswe.z, 3),
            mapsswe_p=significant_digits(f.mapsswe.p), mapsswe_p_holm=significant_digits(holm["mapsswe"][i]),
            sign_b_worse=f.sign.positive, sign_b_better=f.sign.negative, sign_ties=f.sign.ties,
            sign_p=significant_digits(f.sign.p), sign_p_holm=significant_digits(holm["sign"][i]),
            wilcoxon_z=rounded(f.wilcoxon.z, 3), wilcoxon_p=significant_digits(f.wilcoxon.p),
            wilcoxon_p_holm=significant_digits(holm["wilcoxon"][i]),
            verdict=verdict(f.a, f.b, delta, low, high, holm["mapsswe"][i],
                            undetected(f.sentences, delta, f.power)),
            differs=differs(f.a, f.b), holm_family=family(f.a, f.b), detectable_delta=rounded(f.power.detectable),
            sentences_needed=f.power.needed))
    return out


def most_confident(comparisons: list[Comparison], k: int = 3) -> list[Comparison]:
    """The k pairs with the smallest corrected MAPSSWE p-values, the largest |Δ| first among equals; pairs that
    differ in one factor only (two voices under the same engine and condition) come first, as they answer a
    question."""
    return sorted(comparisons, key=lambda c: (c.holm_family != ONE_FACTOR, c.mapsswe_p_holm, -abs(c.delta_wer or 0)))[:k]


STATISTICS.register(Statistic("comparisons", "comparisons.csv", Comparison,
                              lambda given: compare(given.scores, given.n_boot, given.seed)))
