"""Does text the LM finds unlikely get transcribed worse? WER per group by perplexity quartile (edges from the
run's sentences, so every group's bins hold the same sentences) and by reference length, with bootstrap CIs."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.core.records import Grouped
from pipeline.io.conditions import SILENCE
from pipeline.scoring.evaluate import ScoredUtterance
from pipeline.scoring.rates import corpus_wer
from pipeline.scoring.statistics import STATISTICS, Statistic


LENGTH_BINS = ((1, 5), (6, 10), (11, 20), (21, None))


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
    scored = [u for u in utterances if u.status == "ok" and u.condition != SILENCE]
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


def _with_surprisal(given) -> list[DifficultyBin]:
    from pipeline.scoring import failures_by_surprisal  # it reads this module's bins

    return bins(given.scores.utterances, given.n_boot, given.seed) + \
        failures_by_surprisal.bins(given.scores, given.n_boot, given.seed)


STATISTICS.register(Statistic("difficulty", "difficulty.csv", DifficultyBin, _with_surprisal))
