"""The `score` config section, and the revision of what scoring computes: what every scored run records."""
from __future__ import annotations

from dataclasses import dataclass

from pipeline.core.options import option
from pipeline.scoring import normalize as norm


@dataclass(frozen=True)
class ScoreConfig:
    normalize: str = option("basic", "text normalization before alignment", flag="--normalize",
                            choices=tuple(norm.NORMALIZERS))
    bootstrap: int = option(1000, "bootstrap resamples for the 95% CI", at_least=0)
    seed: int = option(1337, "bootstrap seed")
    headline: str = option("micro", "the WER the tables show first: micro (Σ errors / Σ words, as sclite) or macro "
                           "(the mean of per-sentence WER, as seed-tts-eval)", choices=("micro", "macro"))


# Bumped when a change of this project alters what scoring outputs for the same transcripts (the alignment, a
# normalizer, how a rate is pooled): compare-runs refuses to set runs of different revisions side by side. Not
# bumped for changes that leave scores as they were, so an upgrade does not stop comparisons with older runs.
# 2: the basic normalizer puts both texts in Unicode's NFC form.
SCORING_REVISION = 2
