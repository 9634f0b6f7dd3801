"""CMOS (ITU-T P.808's comparison category rating, CCR): two versions of one sentence, the second rated against
the first from -3 to +3; which version comes first is drawn for each trial, and the sign put right when read.
`Comparison` is what every kind of two versions compared does (A/B too)."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations
from typing import ClassVar

import numpy as np

from pipeline.errors import InputError
from pipeline.listen import analysis
from pipeline.listen.create import HEAVY, PAUSE_S, Maker, made
from pipeline.listen.kinds import KINDS
from pipeline.listen.kinds.base import Kind


@dataclass(frozen=True, kw_only=True)
class Comparison(Kind):
    two_clips: ClassVar[bool] = True
    varies: ClassVar[bool] = False  # a listener may rightly prefer one system every time
    shares: ClassVar[bool] = False  # the share of votes preferring B is a figure of its own (A/B)
    preferred: ClassVar[str] = "CMOS (B − A)"  # what a pair's mean preference is called

    def sentences(self, by: dict) -> list[str]:
        if len(by) < 2:
            raise InputError(f"a {self.name} test compares two versions of each sentence: give runs with two "
                             f"systems or more (these have {', '.join(sorted(by))})")
        return sorted(set.intersection(*(set(c) for c in by.values())))

    def test_trials(self, maker: Maker) -> None:
        for sentence in maker.shared:
            for a, b in combinations(maker.systems, 2):
                maker.trial("test", maker.rated[a, sentence], maker.rated[b, sentence], sentence)

    def gold_trials(self, maker: Maker) -> list[str]:
        """A clip against itself in heavy noise: whichever system it is, the clean one is better."""
        if maker.options.gold:
            raise InputError("--gold names single clips; a pair test's gold trials are made by the tool")
        for clip in (next(maker.pick), next(maker.pick)):
            clean = made("gold", clip, np.concatenate([np.zeros(int(PAUSE_S * clip.sr), np.float32), clip.samples]))
            maker.trial("gold", maker.put(clean), maker.put(maker.variant(clip, "gold", HEAVY)), clip.sentence_id,
                        self.good)
        return []

    def trap(self, rng, language: str) -> tuple[int, str]:
        answer = rng.choice([v for v in self.values if v != 0] or list(self.values))
        return answer, f"Please select the answer {self.label(answer).lower()}."

    def page(self, clips: list[str]) -> dict:
        return {**super().page(clips), "scale": [[v, label] for v, label in self.scale]}

    def oriented(self, value: int, swapped: bool) -> int:
        """CCR's sign flipped when the second version was heard first."""
        return -value if swapped else value

    def preference(self, value: int) -> float:
        """A vote, oriented as the test made the pair, as a preference for the second version."""
        return float(value)

    @property
    def preference_scale(self) -> tuple[float, float]:
        return float(min(self.values)), float(max(self.values))

    def analyse(self, result: analysis.Analysis, kept: list[analysis.Vote], clips: dict, n_boot: int,
                seed: int) -> None:
        result.pairs = analysis.pair_scores(kept, clips, self, n_boot, seed)
        result.strengths = analysis.strengths(kept, clips, self, n_boot, seed)

    def human(self, test: str, kept: list[analysis.Vote], origin, clips: dict):
        """Each vote's preference for the second of the pair it rated, by where the pair's clips came from."""
        from pipeline.gate.release import Human

        pairs: dict[tuple, list[tuple[str, str, float]]] = defaultdict(list)
        for v in kept:
            first, second = origin(v.first), origin(v.second)
            if first and second:
                pairs[first, second].append((v.name, v.sentence, self.preference(v.value)))
        return Human(metric=self.metric, test=test, votes=dict(pairs), scale=self.preference_scale) if pairs else None


KINDS.register(Comparison(
    name="cmos", summary="two versions of a sentence, -3 to +3 (P.808's CCR)",
    title="Compared with the first recording, the quality of the second is",
    scale=((3, "Much better"), (2, "Better"), (1, "Slightly better"), (0, "About the same"), (-1, "Slightly worse"),
           (-2, "Worse"), (-3, "Much worse")), good=-3))
