"""Does text the LM finds unlikely get transcribed worse? WER per group by perplexity quartile (edges from the
run's sentences, so every group's bins hold the same sentences), by reference length, and the failure rate of
words by surprisal decile (edges from the run's words, each sentence once), with bootstrap CIs."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.core.records import Grouped, Status
from pipeline.io.conditions import SILENCE
from pipeline.scoring.rates import corpus_wer
from pipeline.scoring.utterances import Results, ScoredUtterance
from pipeline.statistics import STATISTICS, Statistic


LENGTH_BINS = ((1, 5), (6, 10), (11, 20), (21, None))
DECILES = 10  # of the run's words' surprisal


@dataclass(frozen=True, slots=True, kw_only=True)
class DifficultyBin(Grouped):
    voice: str
    asr: str
    condition: str
    by: str  # perplexity (quartiles of the run's sentences), words (reference length), or surprisal (deciles of
    # the run's words: then micro_wer is the share of the bin's words substituted or deleted)
    bin: str  # e.g. "Q1 (3.1-8.4)", "6-10" or "D10 (12.1-23.4 bits)"
    n_utterances: int
    micro_wer: float | None
    ci95_low: float | None  # bootstrap over utterances
    ci95_high: float | None
    n_words: int  # reference words in the bin


def perplexity_edges(utterances: list[ScoredUtterance]) -> list[float] | None:
    per_sentence = {u.sentence_id: u.perplexity for u in utterances if u.perplexity is not None}
    if len(per_sentence) < 4:
        return None
    return [float(x) for x in np.quantile(list(per_sentence.values()), [0, 0.25, 0.5, 0.75, 1])]


def quartile(ppl: float, edges: list[float]) -> int:
    return min(3, int(np.searchsorted(edges[1:4], ppl, side="right")))


def _label(low: int, high: int | None) -> str:
    return f"{low}+" if high is None else f"{low}-{high}"


def length_bin(words: int) -> str:
    return next(_label(low, high) for low, high in LENGTH_BINS if high is None or words <= high)


def bins(utterances: list[ScoredUtterance], n_boot: int = 1000, seed: int = 1337) -> list[DifficultyBin]:
    scored = [u for u in utterances if u.status == Status.OK and u.condition != SILENCE]
    edges = perplexity_edges(scored)
    labels = {}
    if edges:
        labels["perplexity"] = [f"Q{q + 1} ({edges[q]:.3g}-{edges[q + 1]:.3g})" for q in range(4)]
    labels["words"] = [_label(low, high) for low, high in LENGTH_BINS]
    members: dict[tuple, list[ScoredUtterance]] = {}
    for u in scored:
        if edges and u.perplexity is not None:
            members.setdefault((u.group, "perplexity", labels["perplexity"][quartile(u.perplexity, edges)]), []).append(u)
        members.setdefault((u.group, "words", length_bin(u.ref_words)), []).append(u)
    out = []
    for group in dict.fromkeys(u.group for u in scored):
        voice, engine, condition = group
        for by, names in labels.items():
            for name in names:
                rows = members.get((group, by, name), [])
                if not rows:
                    continue
                c = corpus_wer([u.errors for u in rows], [u.ref_words for u in rows], n_boot, seed)
                micro, low, high = (None if x is None else round(x, 4) for x in (c.micro_wer, c.ci_low, c.ci_high))
                out.append(DifficultyBin(voice=voice, asr=engine, condition=condition, by=by, bin=name,
                                         n_utterances=c.n_utterances, micro_wer=micro, ci95_low=low, ci95_high=high,
                                         n_words=c.ref_words))
    return out


def surprisal_edges(utterances: list[ScoredUtterance]) -> list[float] | None:
    """Decile edges of the surprisal of the run's words, each sentence counted once."""
    per_sentence = {u.sentence_id: u.word_surprisal for u in utterances}
    values = [b for bits in per_sentence.values() for b in bits]
    if len(values) < DECILES:
        return None
    return [float(x) for x in np.quantile(values, np.linspace(0, 1, DECILES + 1))]


def decile(bits: float, cuts: list[float]) -> int:
    return min(DECILES - 1, int(np.searchsorted(cuts[1:DECILES], bits, side="right")))


def surprisal_bins(scores: Results, n_boot: int = 1000, seed: int = 1337) -> list[DifficultyBin]:
    """difficulty.csv rows `by = surprisal`: per group and decile, the failure rate of the words in it."""
    scored = [u for u in scores.utterances if u.surprised]
    cuts = surprisal_edges(scored)
    if cuts is None:
        return []
    labels = [f"D{d + 1} ({cuts[d]:.3g}-{cuts[d + 1]:.3g} bits)" for d in range(DECILES)]
    counts: dict[tuple, dict[str, list[int]]] = {}  # (group, decile) → utterance → [failures, words]
    for u in scored:
        for _, failed, bits in scores.words(u):
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


def _with_surprisal(given) -> list[DifficultyBin]:
    return bins(given.scores.utterances, given.n_boot, given.seed) + \
        surprisal_bins(given.scores, given.n_boot, given.seed)


STATISTICS.register(Statistic("difficulty", "difficulty.csv", DifficultyBin, _with_surprisal))
