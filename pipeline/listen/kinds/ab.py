"""A/B preference: which of two versions of one sentence sounds better; the order is drawn for each trial.
`Preference` is what every kind of choosing between two versions does (A/B with no preference too)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pipeline.listen.kinds import KINDS
from pipeline.listen.kinds.cmos import Comparison

FIRST, SECOND = 1, 2  # the answers; 0, where a kind allows it, is no preference


@dataclass(frozen=True, kw_only=True)
class Preference(Comparison):
    shares: ClassVar[bool] = True
    preferred: ClassVar[str] = "preference for B (−1 … +1)"

    gold_tolerance: ClassVar[int] = 0  # a choice is right or wrong

    def oriented(self, value: int, swapped: bool) -> int:
        """The first and the second exchanged when the second version was heard first."""
        return {FIRST: SECOND, SECOND: FIRST}.get(value, value) if swapped else value

    def preference(self, value: int) -> float:
        """−1 for the first version, +1 for the second, 0 for none."""
        return {FIRST: -1.0, SECOND: 1.0}.get(value, 0.0)

    @property
    def preference_scale(self) -> tuple[float, float]:
        return -1.0, 1.0


KINDS.register(Preference(name="ab", summary="which of two versions is better", title="Which recording sounds better?",
                          scale=((FIRST, "The first"), (SECOND, "The second")), good=FIRST))
