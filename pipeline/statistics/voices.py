"""Each voice's consistency (the mean similarity of its utterances of different sentences) and the similarity
between voices, from the speaker embeddings, with bootstrap CIs over sentences (voices.csv)."""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

from pipeline.measures.assessor import Measured
from pipeline.scoring.rates import resamples
from pipeline.statistics import STATISTICS, Statistic
from pipeline.statistics.comparisons import rounded


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


STATISTICS.register(Statistic("voices", "voices.csv", VoiceSimilarity,
                              lambda given: voices(given.measured, given.embeddings, given.n_boot, given.seed)))
