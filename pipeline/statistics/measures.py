"""The measures' statistics (pipeline/measures/: DNSMOS, speaker similarity, …), computed from utterances.csv's
measure columns with no code of any measure's own: per group, each column's mean with a bootstrap 95% interval
over sentences, its 5th, 50th and 95th percentiles and its Spearman correlation with WER; between groups on the
same sentences, the paired bootstrap Δ and the Wilcoxon signed-rank test, Holm-corrected over the same one-factor
families as WER; and from the voice embeddings, each voice's consistency and the similarity between voices."""
from __future__ import annotations

from itertools import combinations

import numpy as np

from dataclasses import dataclass

from pipeline.core.records import ALIGNED, Group, Grouped, grouped

from pipeline.measures.assessor import Measured

from pipeline.scoring.utterances import ScoredUtterance
from pipeline.scoring import paired
from pipeline.scoring.paired import ALPHA
from pipeline.statistics.comparisons import corrected, differs, family, rounded, short, significant_digits, undetected
from pipeline.scoring.rates import corpus_rates, resamples, spearman
from pipeline.statistics import STATISTICS, Statistic


@dataclass(frozen=True, slots=True, kw_only=True)
class MeasureSummary(Grouped):
    """One measure column over one group's scored utterances."""
    voice: str
    asr: str
    condition: str
    measure: str  # the column: dnsmos_ovrl, speaker_sim, …
    n: int  # utterances with a value
    mean: float | None
    ci95_low: float | None  # bootstrap over sentences
    ci95_high: float | None
    p5: float | None
    median: float | None
    p95: float | None
    spearman_rho_wer: float | None  # rank correlation with the utterances' WER
    spearman_p: float | None


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


@dataclass(frozen=True, slots=True, kw_only=True)
class VoiceSimilarity:
    """How alike two voices sound (Resemblyzer embeddings), in one condition; a voice against itself is its
    consistency: how alike its own utterances sound."""
    condition: str
    voice_a: str
    voice_b: str
    pairs: int  # utterance pairs compared (a voice against itself: each pair of two different sentences once)
    similarity: float | None  # their mean cosine
    ci95_low: float | None  # bootstrap over sentences
    ci95_high: float | None


def columns(utterances: list[ScoredUtterance]) -> list[str]:
    """Every measure column in the run, in the order the measures declared them."""
    return list(dict.fromkeys(c for u in utterances for c in u.measures))


def _valued(utterances: list[ScoredUtterance], column: str) -> dict[Group, dict[str, ScoredUtterance]]:
    """Each group's utterances with a value in `column`, by sentence."""
    out: dict[Group, dict[str, ScoredUtterance]] = {}
    for u in utterances:
        if u.status in ALIGNED and u.measures.get(column) is not None:
            out.setdefault(u.group, {})[u.sentence_id] = u
    return out


def summaries(utterances: list[ScoredUtterance], n_boot: int, seed: int) -> list[MeasureSummary]:
    out = []
    for column in columns(utterances):
        for group, members in _valued(utterances, column).items():
            values = [u.measures[column] for u in members.values()]
            c = corpus_rates([(values, [1] * len(values))], n_boot, seed)[0]  # the mean, and its interval
            rated = [u for u in members.values() if u.wer is not None]
            rho = spearman([u.measures[column] for u in rated], [u.wer for u in rated])
            p5, median, p95 = np.percentile(values, [5, 50, 95])
            voice, engine, condition = group
            out.append(MeasureSummary(voice=voice, asr=engine, condition=condition, measure=column, n=len(values),
                                      mean=rounded(c.micro_wer), ci95_low=rounded(c.ci_low),
                                      ci95_high=rounded(c.ci_high), p5=rounded(p5), median=rounded(median),
                                      p95=rounded(p95), spearman_rho_wer=rounded(rho.rho),
                                      spearman_p=rounded(rho.p, 6)))
    return out


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
        groups = _valued(utterances, column)
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
        for (a, b, va, vb, (delta, low, high), w, exact), p_holm, e_holm in zip(found, holm, exact_holm):
            power = paired.power([q - p for p, q in zip(va, vb)], delta, ALPHA)
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


def voices(rows: list[Measured], embeddings: dict[str, np.ndarray], n_boot: int, seed: int) -> list[VoiceSimilarity]:
    """For each condition, every two voices' mean cosine over their utterances of different sentences, with a
    bootstrap interval over sentences; a voice against itself is its consistency. `embeddings`: each measured
    row's voice embedding, by the row's id."""
    by: dict[str, dict[str, dict[str, np.ndarray]]] = {}
    for m in rows:
        vector = embeddings.get(m.id)
        if vector is not None:
            by.setdefault(m.condition, {}).setdefault(m.voice, {})[m.sentence_id] = vector / np.linalg.norm(vector)
    out = []
    for condition, voiced in by.items():
        sentences = sorted({s for v in voiced.values() for s in v})
        index = {s: i for i, s in enumerate(sentences)}
        for va, vb in [(v, v) for v in voiced] + list(combinations(voiced, 2)):
            a, b = voiced[va], voiced[vb]
            sims = np.full((len(sentences), len(sentences)), np.nan)
            for sa, ea in a.items():
                for sb, eb in b.items():
                    if sa != sb:  # never an utterance against itself, nor two voices on one sentence's text alone
                        sims[index[sa], index[sb]] = float(ea @ eb)
            out.append(_similarity(condition, va, vb, sims, n_boot, seed))
    return out


def _similarity(condition: str, va: str, vb: str, sims: np.ndarray, n_boot: int, seed: int) -> VoiceSimilarity:
    pairs = int(np.sum(~np.isnan(sims)))
    if va == vb:
        pairs //= 2  # each pair of two sentences is there twice
    mean = float(np.nanmean(sims)) if pairs else None
    low = high = None
    if pairs and n_boot and len(sims) > 1:
        means = []
        for idx in resamples(len(sims), n_boot, seed):
            for row in idx:
                block = sims[np.ix_(row, row)]
                if np.any(~np.isnan(block)):
                    means.append(np.nanmean(block))
        if means:
            low, high = np.percentile(means, [2.5, 97.5])
    return VoiceSimilarity(condition=condition, voice_a=va, voice_b=vb, pairs=pairs, similarity=rounded(mean),
                           ci95_low=rounded(low), ci95_high=rounded(high))


STATISTICS.register(Statistic("measure_summary", "measure_summary.csv", MeasureSummary,
                              lambda given: summaries(given.scores.utterances, given.n_boot, given.seed)))
STATISTICS.register(Statistic("measure_comparisons", "measure_comparisons.csv", MeasureComparison,
                              lambda given: comparisons(given.scores.utterances, given.n_boot, given.seed)))
STATISTICS.register(Statistic("voices", "voices.csv", VoiceSimilarity,
                              lambda given: voices(given.measured, given.embeddings, given.n_boot, given.seed)))
