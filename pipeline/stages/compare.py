"""compare: scores → the statistics that answer users' questions (pipeline/statistics/)."""
from __future__ import annotations

from pipeline.asr import base as asr
from pipeline.config.run import Config
from pipeline.run import artifacts
from pipeline.run.stage import Outcome, Stage
from pipeline import statistics
from pipeline.scoring.config import SCORING_REVISION
from pipeline.scoring.paired import ALPHA


def run(cfg: Config, loaded: dict) -> Outcome:
    scores, s = loaded["scores"], cfg.score
    measures = loaded["measures"]
    stats = statistics.compute(scores, s.bootstrap, s.seed, asr.ENGINES.model_family,
                               measures.rows if measures else [], measures.embeddings if measures else {})
    statistics.write(stats, artifacts.path("statistics", cfg).parent)
    significant = sum(1 for c in stats["comparisons"] if c.mapsswe_p_holm < ALPHA)
    return Outcome({"pairs": len(stats["comparisons"]), "significant": significant, "failing_words": len(stats["words"]),
                   "breakdowns": len(stats["breakdown"])})


STAGE = Stage("compare", "paired comparisons, normalizer sensitivity, difficulty bins, error attribution, "
              "breakdown SNR, the measures' statistics", reads=("scores",), optional=("measures",),
              makes=("statistics",), config=("score",), run=run,
              # a plugin's table too; and the scoring revision, which counts what the statistics pool as the scores do
              environment=lambda cfg: {"statistics": statistics.STATISTICS.names(),
                                       "scoring_revision": SCORING_REVISION})
