"""The statistics that answer users' questions, computed from the scores: paired comparisons between every two
groups, the normalizer's share of the WER, WER by text difficulty and by the LM's surprisal at each word, which
words fail and whom to blame, engine agreement, and the breakdown SNR; and the files they are written to."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pipeline.core import tables
from pipeline.core.records import as_row
from pipeline.scoring.attribution import Blame, EngineAgreement, WordAttribution
from pipeline.scoring.comparisons import Comparison
from pipeline.scoring.difficulty import DifficultyBin
from pipeline.scoring.failures_by_surprisal import SurprisalEffect
from pipeline.scoring.measures import MeasureComparison, MeasureSummary, VoiceSimilarity
from pipeline.scoring.robustness import Breakdown
from pipeline.scoring.sensitivity import NormalizerEffect
from pipeline.core.tables import Document, Table
from pipeline.scoring import attribution, difficulty, failures_by_surprisal, measures, robustness, sensitivity
from pipeline.scoring.comparisons import compare
from pipeline.scoring.evaluate import Results


@dataclass(kw_only=True)
class Statistics:
    normalizer: str  # the run's, under which the utterances were scored
    bootstrap: int  # resamples behind every interval
    comparisons: list[Comparison]
    normalizers: list[NormalizerEffect]
    difficulty: list[DifficultyBin]
    words: list[WordAttribution]
    agreement: list[EngineAgreement]
    breakdown: list[Breakdown]
    surprisal: list[SurprisalEffect]
    blame: list[Blame]
    measure_summary: list[MeasureSummary]
    measure_comparisons: list[MeasureComparison]
    voices: list[VoiceSimilarity]


def compute(scores: Results, n_boot: int, seed: int, family_of: Callable[[str], str],
            measured: list | None = None, embeddings: dict | None = None) -> Statistics:
    """`family_of(engine)`: the model family an engine runs (asr.base.ENGINES.model_family); `measured`: the
    measures' rows, and `embeddings` their voice embeddings by row id."""
    utterances = scores.utterances
    return Statistics(normalizer=scores.normalizer, bootstrap=n_boot, comparisons=compare(scores, n_boot, seed),
                      measure_summary=measures.summaries(utterances, n_boot, seed),
                      measure_comparisons=measures.comparisons(utterances, n_boot, seed),
                      voices=measures.voices(measured or [], embeddings or {}, n_boot, seed),
                      normalizers=sensitivity.effects(utterances, scores.normalizer),
                      difficulty=difficulty.bins(utterances, n_boot, seed) + failures_by_surprisal.bins(scores, n_boot,
                                                                                                        seed),
                      surprisal=failures_by_surprisal.effects(scores),
                      blame=attribution.blame(scores, family_of, n_boot, seed),
                      words=attribution.words(scores, family_of),
                      agreement=attribution.agreement(utterances, family_of),
                      breakdown=robustness.breakdowns(utterances, n_boot, seed))


FILES = (  # the JSON first: it is always written, and an artifact is there when its first file is
    Document("comparisons.json", lambda s: {"normalizer": s.normalizer, "bootstrap": s.bootstrap,
                                            "pairs": [as_row(c) for c in s.comparisons]},
             read=lambda data: {"normalizer": data["normalizer"], "bootstrap": data["bootstrap"]}),
    Table("comparisons.csv", Comparison, "comparisons"),
    Table("normalizers.csv", NormalizerEffect, "normalizers"),
    Table("difficulty.csv", DifficultyBin, "difficulty"),
    Table("words.csv", WordAttribution, "words"),
    Table("agreement.csv", EngineAgreement, "agreement"),
    Table("breakdown.csv", Breakdown, "breakdown"),
    Table("surprisal.csv", SurprisalEffect, "surprisal"),
    Table("blame.csv", Blame, "blame"),
    Table("measure_summary.csv", MeasureSummary, "measure_summary"),
    Table("measure_comparisons.csv", MeasureComparison, "measure_comparisons"),
    Table("voices.csv", VoiceSimilarity, "voices"),
)


def write(stats: Statistics, out_dir: str | Path) -> list[Path]:
    return tables.write(FILES, stats, out_dir, skip_empty=True)
