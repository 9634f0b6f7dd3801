"""A listening-test kind: what a trial shows, what a vote holds, how it reads. One file here each (mos.py, smos.py,
cmos.py, ab.py, ab_np.py), or a plugin's module named by the entry point group `speech_eval.listening`."""
from __future__ import annotations

from dataclasses import dataclass

from pipeline.core.registry import Catalog


@dataclass(frozen=True)
class Kind:
    name: str  # as `listen create --kind` takes it
    summary: str  # what it measures, for the help
    title: str  # what the listener is asked, on every trial
    scale: tuple[tuple[int, str], ...]  # (value, label) of every answer, in the order they are shown
    pair: bool  # a trial plays two versions of one sentence (CMOS, A/B): their order is drawn per trial
    reference: bool = False  # a trial plays the speaker reference beside the clip (SMOS)
    # the answers gold trials expect: `good` for a clean clip (SMOS: the reference against itself; a pair: the
    # clean version first, the same sentence in heavy noise second), `bad` for heavy noise (SMOS: another voice)
    good: int | None = None
    bad: int | None = None

    @property
    def values(self) -> tuple[int, ...]:
        return tuple(v for v, _ in self.scale)

    def label(self, value: int) -> str:
        return dict(self.scale)[value]

    def oriented(self, value: int, swapped: bool) -> int:
        """A vote on a pair as it reads for (first version, second version) as created, whatever order the
        listener heard them in: CCR's sign flipped, A and B exchanged. Nothing to do for a single clip."""
        if not self.pair or not swapped:
            return value
        return -value if min(self.values) < 0 else {1: 2, 2: 1}.get(value, value)


KINDS = Catalog("pipeline.listen.kinds", "speech_eval.listening", "listen --kind", skip=())
