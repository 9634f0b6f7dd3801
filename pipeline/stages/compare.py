"""compare: scores → the statistics that answer users' questions: paired comparisons between every two groups,
the normalizer's share of the WER, WER by text difficulty, which words fail and whom to blame, and the
breakdown SNR."""
from __future__ import annotations

from dataclasses import asdict

from pipeline import artifacts, records, store
from pipeline.config import Config
from pipeline.records import Breakdown, Comparison, DifficultyBin, EngineAgreement, NormalizerEffect, WordAttribution
from pipeline.scoring import attribution, difficulty, robustness, sensitivity
from pipeline.scoring.compare import compare
from pipeline.stage import Result, Stage


def run(cfg: Config, loaded: dict) -> Result:
    scores, out = loaded["scores"], artifacts.path("statistics", cfg).parent
    utterances, events, s = scores["utterances"], scores["events"], cfg.score
    comparisons = compare(utterances, events, s.bootstrap, s.seed)
    records.write_csv(out / "comparisons.csv", Comparison, comparisons)
    store.write_json(out / "comparisons.json", {"normalizer": s.normalize, "bootstrap": s.bootstrap,
                                                 "pairs": [asdict(c) for c in comparisons]})
    records.write_csv(out / "normalizers.csv", NormalizerEffect, sensitivity.effects(utterances, s.normalize))
    records.write_csv(out / "difficulty.csv", DifficultyBin, difficulty.bins(utterances, s.bootstrap, s.seed))
    words = attribution.words(utterances, events)
    records.write_csv(out / "words.csv", WordAttribution, words)
    records.write_csv(out / "agreement.csv", EngineAgreement, attribution.agreement(utterances))
    breakdowns = robustness.breakdowns(utterances, s.bootstrap, s.seed)
    records.write_csv(out / "breakdown.csv", Breakdown, breakdowns)
    significant = sum(1 for c in comparisons if c.mapsswe_p_holm < 0.05)
    return Result({"pairs": len(comparisons), "significant": significant, "failing_words": len(words),
                   "breakdowns": len(breakdowns)})


STAGE = Stage("compare", "paired comparisons, normalizer sensitivity, difficulty bins, error attribution, "
              "breakdown SNR", reads=("scores",), makes=("statistics",), config=("score",), run=run)
