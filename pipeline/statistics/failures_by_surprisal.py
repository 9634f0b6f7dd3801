"""Does the ASR fail where the LM was surprised? Each reference word carries its surprisal under the LM that wrote
the sentences (bits, lm/surprisal.py); this statistic gives each group's Spearman ρ between a word's surprisal and
whether it failed (substituted or deleted), and the mean surprisal of the words that failed and of the others.
Each group's failure rate per surprisal decile is a difficulty bin (difficulty.py)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.core.records import Grouped
from pipeline.scoring.rates import spearman
from pipeline.scoring.utterances import Results
from pipeline.statistics import STATISTICS, Statistic


@dataclass(frozen=True, slots=True, kw_only=True)
class SurprisalEffect(Grouped):
    """Does the ASR fail where the LM was surprised? One group's reference words, by surprisal and failure."""
    voice: str
    asr: str
    condition: str
    words: int  # reference words with a surprisal
    failures: int  # of them, substituted or deleted
    mean_surprisal_failed: float | None  # bits
    mean_surprisal_right: float | None
    spearman_n: int
    spearman_rho: float | None  # rank correlation of a word's surprisal and its failure (1) or not (0)
    spearman_p: float | None


def effects(scores: Results) -> list[SurprisalEffect]:
    """surprisal.csv: per group, the Spearman ρ between each word's surprisal and its failure (1) or not (0)."""
    words: dict[tuple, list[tuple[bool, float]]] = {}
    for u in scores.utterances:
        if u.surprised:
            words.setdefault(u.group, []).extend((f, b) for _, f, b in scores.words(u))
    out = []
    for (voice, engine, condition), pairs in words.items():
        failed = [b for f, b in pairs if f]
        right = [b for f, b in pairs if not f]
        rho = spearman([b for _, b in pairs], [float(f) for f, _ in pairs])
        out.append(SurprisalEffect(
            voice=voice, asr=engine, condition=condition, words=len(pairs), failures=len(failed),
            mean_surprisal_failed=round(float(np.mean(failed)), 3) if failed else None,
            mean_surprisal_right=round(float(np.mean(right)), 3) if right else None,
            spearman_n=rho.n, spearman_rho=None if rho.rho is None else round(rho.rho, 4),
            spearman_p=None if rho.p is None else round(rho.p, 6)))
    return out


STATISTICS.register(Statistic("surprisal", "surprisal.csv", SurprisalEffect, lambda given: effects(given.scores)))
