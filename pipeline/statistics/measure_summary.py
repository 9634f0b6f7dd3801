"""Each measure column per group: its mean with a bootstrap CI over sentences, p5, median and p95, and its
Spearman correlation with WER (measure_summary.csv)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.core.records import ALIGNED, Group, Grouped
from pipeline.scoring.rates import corpus_rates, spearman
from pipeline.scoring.utterances import ScoredUtterance
from pipeline.statistics import STATISTICS, Statistic
from pipeline.statistics.comparisons import rounded


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


def columns(utterances: list[ScoredUtterance]) -> list[str]:
    """Every measure column in the run, in the order the measures declared them."""
    return list(dict.fromkeys(c for u in utterances for c in u.measures))


def valued(utterances: list[ScoredUtterance], column: str) -> dict[Group, dict[str, ScoredUtterance]]:
    """Each group's utterances with a value in `column`, by sentence."""
    out: dict[Group, dict[str, ScoredUtterance]] = {}
    for u in utterances:
        if u.status in ALIGNED and u.measures.get(column) is not None:
            out.setdefault(u.group, {})[u.sentence_id] = u
    return out


def summaries(utterances: list[ScoredUtterance], n_boot: int, seed: int) -> list[MeasureSummary]:
    out = []
    for column in columns(utterances):
        for group, members in valued(utterances, column).items():
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


STATISTICS.register(Statistic("measure_summary", "measure_summary.csv", MeasureSummary,
                              lambda given: summaries(given.scores.utterances, given.n_boot, given.seed)))
