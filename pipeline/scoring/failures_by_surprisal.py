"""Does the ASR fail where the LM was surprised? Each reference word carries its surprisal under the LM that wrote
the sentences (bits, lm/surprisal.py); this module bins words by surprisal decile and gives each group's failure
rate per decile (substituted or deleted words / words, with a bootstrap CI over utterances) and the Spearman ρ
between a word's surprisal and whether it failed. Decile edges come from the run's sentences, so every group's
bins hold the same words."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.core.records import Grouped
from pipeline.io.conditions import SILENCE
from pipeline.scoring.align import Alignment, Op
from pipeline.scoring.difficulty import DifficultyBin
from pipeline.scoring.evaluate import Results, ScoredUtterance
from pipeline.scoring.rates import corpus_wer, spearman
from pipeline.scoring.statistics import STATISTICS, Statistic


DECILES = 10


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


def outcomes(u: ScoredUtterance, alignment: Alignment) -> list[tuple[str, bool, float | None]]:
    """Each normalized reference word of an aligned utterance: (word, failed, surprisal or None)."""
    bits = u.word_surprisal or None
    out, at = [], 0
    for op, ref, _ in alignment.ops:
        if ref is not None:
            out.append((ref, op in (Op.SUBSTITUTION, Op.DELETION), bits[at] if bits else None))
            at += 1
    return out


def _scored(utterances: list[ScoredUtterance]) -> list[ScoredUtterance]:
    return [u for u in utterances if u.status == "ok" and u.condition != SILENCE and u.word_surprisal]


def edges(utterances: list[ScoredUtterance]) -> list[float] | None:
    """Decile edges of the surprisal of the run's words, each sentence counted once."""
    per_sentence = {u.sentence_id: u.word_surprisal for u in utterances}
    values = [b for bits in per_sentence.values() for b in bits]
    if len(values) < DECILES:
        return None
    return [float(x) for x in np.quantile(values, np.linspace(0, 1, DECILES + 1))]


def decile(bits: float, cuts: list[float]) -> int:
    return min(DECILES - 1, int(np.searchsorted(cuts[1:DECILES], bits, side="right")))


def bins(scores: Results, n_boot: int = 1000, seed: int = 1337) -> list[DifficultyBin]:
    """difficulty.csv rows `by = surprisal`: per group and decile, the failure rate of the words in it."""
    scored = _scored(scores.utterances)
    cuts = edges(scored)
    if cuts is None:
        return []
    labels = [f"D{d + 1} ({cuts[d]:.3g}-{cuts[d + 1]:.3g} bits)" for d in range(DECILES)]
    counts: dict[tuple, dict[str, list[int]]] = {}  # (group, decile) → utterance → [failures, words]
    for u in scored:
        for _, failed, bits in outcomes(u, scores.alignment(u)):
            cell = counts.setdefault((u.group, decile(bits, cuts)), {}).setdefault(u.id, [0, 0])
            cell[0] += failed
            cell[1] += 1
    out = []
    for group in dict.fromkeys(u.group for u in scored):
        for d, name in enumerate(labels):
            per_utterance = list(counts.get((group, d), {}).values())
            if not per_utterance:
                continue
            c = corpus_wer([f for f, _ in per_utterance], [n for _, n in per_utterance], n_boot, seed)
            rate, low, high = (None if x is None else round(x, 4) for x in (c.micro_wer, c.ci_low, c.ci_high))
            voice, engine, condition = group
            out.append(DifficultyBin(voice=voice, asr=engine, condition=condition, by="surprisal", bin=name,
                                     n_utterances=c.n_utterances, micro_wer=rate, ci95_low=low, ci95_high=high,
                                     n_words=c.ref_words))
    return out


def effects(scores: Results) -> list[SurprisalEffect]:
    """surprisal.csv: per group, the Spearman ρ between each word's surprisal and its failure (1) or not (0)."""
    words: dict[tuple, list[tuple[bool, float]]] = {}
    for u in _scored(scores.utterances):
        words.setdefault(u.group, []).extend((f, b) for _, f, b in outcomes(u, scores.alignment(u)))
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
