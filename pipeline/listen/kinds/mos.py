"""ACR MOS (ITU-T P.808): each clip alone, rated on the absolute category scale. `Rating` is what every kind of
one clip rated on a scale does (SMOS too)."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from pipeline.listen import analysis
from pipeline.listen.create import HEAVY, Maker, user_gold
from pipeline.listen.kinds import KINDS
from pipeline.listen.kinds.base import Kind


@dataclass(frozen=True, kw_only=True)
class Rating(Kind):
    predicts: ClassVar[str] = "mos"  # the measures checked against the listeners: those that predict this scale

    def test_trials(self, maker: Maker) -> None:
        for (_, sentence), cid in maker.rated.items():
            maker.trial("test", cid, None, sentence)

    def gold_trials(self, maker: Maker) -> list[str]:
        """The user's gold clips; else a natural recording (the runs' speaker references) as the good gold, where
        there is one, and a clip in heavy noise as the bad."""
        if maker.options.gold:
            user_gold(maker)
            return []
        notes = []
        if maker.naturals:
            natural = maker.naturals[0]
            maker.trial("gold", maker.put(maker.variant(natural, "gold", None)), None, natural.sentence_id, self.good)
        else:
            notes.append("no good gold trial: the runs have no natural recording (speaker reference) and no --gold "
                         "was given, and a system's clip has no known answer; acceptance rests on the trapping "
                         "trials, the bad gold (a clip in -5 dB of noise), the recordings played to their end and "
                         "ratings that vary")
        clip = next(maker.pick)
        maker.trial("gold", maker.put(maker.variant(clip, "gold", HEAVY)), None, clip.sentence_id, self.bad)
        return notes

    def analyse(self, result: analysis.Analysis, kept: list[analysis.Vote], clips: dict, n_boot: int,
                seed: int) -> None:
        analysis.each_alone(result, kept, clips, self, n_boot, seed)

    def human(self, test: str, kept: list[analysis.Vote], origin, clips: dict):
        """Each rated sentence's mean vote, by where its clip came from."""
        from pipeline.gate.release import Human

        per_clip: dict[str, list[int]] = defaultdict(list)
        for v in kept:
            per_clip[v.second or v.first].append(v.value)
        means: dict[tuple[str, str, str], dict[str, float]] = defaultdict(dict)
        for cid, values in per_clip.items():
            where = origin(cid)
            if where:
                means[where][clips[cid]["sentence"]] = float(np.mean(values))
        return Human(metric=self.metric, test=test, means=dict(means),
                     scale=(float(min(self.values)), float(max(self.values)))) if means else None


KINDS.register(Rating(
    name="mos", summary="each clip rated 1-5 (P.808's ACR)", title="How would you rate the quality of this speech?",
    scale=((5, "Excellent"), (4, "Good"), (3, "Fair"), (2, "Poor"), (1, "Bad")), good=4, bad=1))
