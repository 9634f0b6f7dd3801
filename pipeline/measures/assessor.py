"""The assess worker: one measure, loaded once from its resolved Source; its result per utterance is an
`Assessed` (pipeline/exec/workers.py says what every worker shares). A `Measured` is a speech row as every
selected measure saw it: the assess stage's rows."""
from __future__ import annotations

import inspect
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from pipeline.core.records import SpeechRow, Status, columns_of, joined
from pipeline.core.source import Source
from pipeline.errors import ModelUnloadable
from pipeline.exec.workers import Done, one_blas_thread, unloadable, where
from pipeline.measures import base as measures
from pipeline.measures.base import Scores


@dataclass(frozen=True, slots=True, kw_only=True)
class Measured(SpeechRow):
    """One speech row as the measures saw it (the `assess` stage's measures.csv)."""
    sentence_id: str
    voice: str
    condition: str
    audio_sha256: str  # of the audio measured: every measure's cache key starts from it
    status: str  # ok, or error when the audio could not be read (the row's transcript says so too)
    notes: list[str] = joined()  # why a value is missing (silent audio, an unreadable speaker reference), or what
    # was done to the audio (a clip under 0.5 s looped by DNSMOS)
    values: dict[str, float | None] = columns_of()  # each selected measure's columns
    speaker_reference: str = ""  # the audio the row's voice should sound like, as the run was given it
    natural: str = ""  # a natural recording of the row's sentence, as the manifest named it

    @property
    def id(self) -> str:
        return self.speech_id  # the speech row measured: every engine's transcript of it joins here


@dataclass(kw_only=True, slots=True)
class Assessed(Done):
    scores: Scores = field(default_factory=lambda: Scores({}))  # what the measure made of the utterance
    audio_sha256: str = ""  # of the audio measured, filled in by the stage that read it

    def record(self) -> dict:
        """Kept flat, as the measure's values, notes and embedding."""
        out = {name: getattr(self, name) for name in self.recorded() if name != "scores"}
        return {**out, "values": self.scores.values, "notes": list(self.scores.notes),
                "embedding": list(self.scores.embedding)}

    @classmethod
    def from_record(cls, record: dict) -> Assessed:
        scores = Scores(dict(record.get("values", {})), tuple(record.get("notes", ())),
                        tuple(record.get("embedding", ())))
        return cls(scores=scores, **{name: record[name] for name in cls.recorded() if name in record
                                     and name != "scores"})


@dataclass(frozen=True)
class Clip:
    """A measure's input: the utterance's audio at the measure's rate, each need it declared by name (None where
    the row has none or it cannot be read), and what the stage noted in reading them (naming the file)."""
    audio: np.ndarray
    needs: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def takes_otherwise(score, needs: tuple[str, ...]) -> list[str]:
    """The parameters of a measure's score() past the audio that the stage would not fill: neither a declared need
    nor given a default (a measure written for the one-reference interface of earlier versions)."""
    params = list(inspect.signature(score).parameters.values())[1:]
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return []
    return [p.name for p in params if p.name not in needs and p.default is p.empty
            and p.kind not in (p.VAR_POSITIONAL,)]


class Assessor:
    """One measure, loaded once from its resolved Source; each Clip scored alone."""

    def __init__(self, name: str, source: Source, threads: int = 0):
        self.measure, self.failed = None, None
        self.threads = threads or min(os.cpu_count() or 1, 8)
        one_blas_thread()
        declared = measures.MEASURES.get(name)
        try:
            self.measure = declared.load(source)
        except Exception as e:
            self.failed = unloadable(source, e)
            return
        unknown = takes_otherwise(self.measure.score, declared.needs)
        if unknown:
            self.failed = ModelUnloadable(
                f"measure {name!r}: its score() takes {', '.join(map(repr, unknown))} without a default, which is no "
                f"need it declares ({', '.join(declared.needs) or 'none'}); score(audio, **needs) is given each "
                "declared need by its name (the second argument `reference` of earlier versions is the keyword "
                "speaker_reference, declared as needs=('speaker_reference',))")

    def work(self, inputs: list[Clip]) -> list[Assessed]:
        if self.failed:
            raise self.failed
        # Longest first: a measure's cost grows with the clip, and a long clip started last would run alone while
        # the other threads idle (a 14 s clip among 3 s ones took a third of Distill-MOS's stage). Each clip is
        # scored alone, so the order changes no value.
        order = sorted(range(len(inputs)), key=lambda i: -len(inputs[i].audio))
        with ThreadPoolExecutor(self.threads) as pool:
            scored = dict(zip(order, pool.map(self.one, [inputs[i] for i in order])))
        return [scored[i] for i in range(len(inputs))]

    def one(self, clip: Clip) -> Assessed:
        scores = self.measure.score(clip.audio, **clip.needs).noted(clip.notes)
        return Assessed(status=Status.OK, scores=scores, **where())
