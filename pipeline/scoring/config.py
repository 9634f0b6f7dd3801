"""The `score` config section, and the revision of what scoring computes: what every scored run records."""
from __future__ import annotations

from dataclasses import dataclass, field

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
# 3: the unit follows the language (characters for zh, ja, th, …: scoring/language.py), and the seed-tts-eval
#    normalizer's texts are aligned as jiwer aligns them (its published numbers were counted so).
# 4: a row whose reference is empty after normalization counts its words as insertions in the pooled figures (micro
#    WER and CER, ΔWER, MAPSSWE, S/D/I, sentences in error), as sclite and jiwer count them; it was left out.
# 5: on a tie of a deletion and an insertion the aligner takes the insertion, as sclite does; it took the deletion,
#    and an alignment of the same cost could count otherwise (12 of 20,000 random pairs over five words).
# 6: the sclite normalizer reads words as sclite does: a word's tags after an unescaped `;` are left out, its
#    backslashes dropped and one closing `*` dropped (`a\;s;TAG1` is `a;s`), and a bare `@` is no word; they were
#    part of the word. In a language scored by characters, `sclite` and `none` keep a run of printable ASCII whole,
#    as sclite's -c NOASCII does (`GPT-4`, `3.5`); they cut it at punctuation (`GPT - 4`).
SCORING_REVISION = 6


@dataclass(frozen=True, kw_only=True)
class Comparability:
    """What a run's WER can stand beside (config/recipes.py decides it; summary.json records it)."""
    recipe: str = ""  # "" when the run follows none
    departures: list[str] = field(default_factory=list)  # each required value the run changed: "asr.engines …"
    line: str = ""  # what the WER is comparable with, in one line

    @property
    def exact(self) -> bool:
        return bool(self.recipe) and not self.departures

    def as_json(self) -> dict:
        return {"recipe": self.recipe, "exact": self.exact, "departures": self.departures, "line": self.line}

    @classmethod
    def from_json(cls, data: dict) -> Comparability:
        return cls(recipe=data.get("recipe", ""), departures=list(data.get("departures", [])),
                   line=data.get("line", ""))
