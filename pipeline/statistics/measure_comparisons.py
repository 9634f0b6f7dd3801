"""Each measure column between groups that heard different audio of the same sentences: the paired-bootstrap Δ,
the exact Wilcoxon signed-rank test (and the normal approximation beside it), Holm-corrected over the same
one-factor families as WER (measure_comparisons.csv)."""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

from pipeline.core.records import Group, grouped
from pipeline.scoring import paired
from pipeline.scoring.paired import ALPHA
from pipeline.scoring.utterances import ScoredUtterance
from pipeline.statistics import STATISTICS, Statistic
from pipeline.statistics.comparisons import (corrected, differs, exact_reach, family, rounded, short,
                                             significant_digits, undetected)
from pipeline.statistics.measure_summary import columns, valued


@dataclass(frozen=True, slots=True, kw_only=True)
class MeasureComparison:
    """Two groups on the same sentences, for one measure column: B against A."""
    a: Group = grouped()  # voice | asr | condition
    b: Group = grouped()
    measure: str
    sentences: int  # shared sentences where both have a value
    mean_a: float | None
    mean_b: float | None
    delta: float | None  # mean_b − mean_a
    delta_ci95_low: float | None  # paired bootstrap over sentences
    delta_ci95_high: float | None
    wilcoxon_z: float | None  # the normal approximation, zeros' ranks split (as sc_stats' test on WER), for
    wilcoxon_p: float  # reference; the verdict rests on exact_p
    wilcoxon_p_holm: float  # Holm-corrected within the measure's holm_family
    verdict: str
    differs: str  # voice, condition, or both joined by + (groups that differ only in the engine heard the same audio)
    holm_family: str  # one-factor or cross-factor, as for WER
    detectable_delta: float | None = None  # the smallest |Δ| these sentences detect with 80% power at α 0.05 (a
    # paired t-test on the per-sentence differences; docs/statistics.md)
    sentences_needed: int | None = None  # sentences it would take to detect the observed Δ so; empty when Δ is 0
    exact_p: float | None = None  # the exact Wilcoxon signed-rank test (paired.signed_rank): what the verdict uses
    exact_p_holm: float | None = None  # Holm-corrected within the measure's holm_family


def verdict(a: Group, b: Group, column: str, delta: float | None, p: float, power_note: str = "") -> str:
    name_a, name_b = short(a, b)
    shared = ", ".join(a[i] for i in range(3) if a[i] == b[i] and a[i])
    context = f"{shared}: " if shared else ""
    if delta is None:
        return f"{context}{name_a} and {name_b} share no {column} values"
    if p < ALPHA and delta != 0:
        return f"{context}{name_b} has {'higher' if delta > 0 else 'lower'} {column} than {name_a}, " \
               f"Δ = {delta:+.3f}, p = {p:.3g}"
    return f"{context}no significant difference in {column} between {name_a} and {name_b}, Δ = {delta:+.3f}, " \
           f"p = {p:.3g}{power_note}"


def comparisons(utterances: list[ScoredUtterance], n_boot: int, seed: int) -> list[MeasureComparison]:
    """Pairs of groups that heard different audio (they differ in voice or condition; two engines hear the same
    audio, so their measures are the same) on the sentences both have a value for."""
    out = []
    for column in columns(utterances):
        groups = valued(utterances, column)
        found = []
        for a, b in combinations(groups, 2):
            if "asr" in differs(a, b):
                continue
            shared = [s for s in groups[a] if s in groups[b]]
            if shared:
                va = [groups[a][s].measures[column] for s in shared]
                vb = [groups[b][s].measures[column] for s in shared]
                found.append((a, b, va, vb, paired.paired_bootstrap(va, vb, [1] * len(shared), n_boot, seed),
                              paired.wilcoxon(vb, va), paired.signed_rank([q - p for p, q in zip(va, vb)])))
        pairs = [(a, b) for a, b, *_ in found]
        holm = corrected(pairs, [w.p for *_, w, _ in found])
        exact_holm = corrected(pairs, [e.p for *_, e in found])
        powers = [paired.power([q - p for p, q in zip(va, vb)], delta, ALPHA)
                  for _, _, va, vb, (delta, *_), *_ in found]
        powers = exact_reach(pairs, powers, [len(va) for _, _, va, *_ in found])
        for (a, b, va, vb, (delta, low, high), w, exact), p_holm, e_holm, power in zip(found, holm, exact_holm,
                                                                                        powers):
            out.append(MeasureComparison(
                a=a, b=b, measure=column, sentences=len(va), mean_a=rounded(np.mean(va)), mean_b=rounded(np.mean(vb)),
                delta=rounded(delta), delta_ci95_low=rounded(low), delta_ci95_high=rounded(high),
                wilcoxon_z=rounded(w.z, 3), wilcoxon_p=significant_digits(w.p),
                wilcoxon_p_holm=significant_digits(p_holm), exact_p=significant_digits(exact.p),
                exact_p_holm=significant_digits(e_holm),
                verdict=verdict(a, b, column, rounded(delta), e_holm, undetected(len(va), rounded(delta), power)),
                differs=differs(a, b), holm_family=family(a, b), detectable_delta=rounded(power.detectable),
                sentences_needed=power.needed))
    return out


STATISTICS.register(Statistic("measure_comparisons", "measure_comparisons.csv", MeasureComparison,
                              lambda given: comparisons(given.scores.utterances, given.n_boot, given.seed)))
