"""The Measure interface and its registry: a per-utterance score of the audio (naturalness, speaker similarity,
distance from a natural recording), beside the transcript's WER.

A measure is one file in this package that calls `MEASURES.register`. It declares its name, its columns and what
each means, the model it loads (a Source whose files' sha256 join every key its output feeds), the rate it hears
audio at, and what it needs besides the audio, by name (NEEDS: a speaker reference, a natural recording of the
same sentence, the sentence's text). The `assess` stage gives each measure the audio of each utterance alone, at
its rate, and each need it declared as a keyword argument, and caches each result as a sealed record like a
transcript's, keyed by the audio, the model and each need it declared; scoring joins the columns to
utterances.csv, and the statistics and the report pick up every declared column with no code of the measure's
own."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Protocol

import numpy as np

from pipeline.core.options import option
from pipeline.core.registry import Catalog
from pipeline.core.source import Source
from pipeline.errors import ConfigError
from pipeline.measures import calibration

# What a measure may need besides the utterance's audio, each passed to `score` as the keyword of its name (None
# where the row has none): every speech row carries them, and the assess stage gives each measure what it declared.
SPEAKER_REFERENCE = "speaker_reference"  # audio of the voice the utterance should sound like (a cloning prompt)
NATURAL = "natural"  # a natural recording of the same sentence: the ground truth of MCD and F0 error
TEXT = "text"  # the sentence the utterance should say
NEEDS = (SPEAKER_REFERENCE, NATURAL, TEXT)


@dataclass(frozen=True)
class Scores:
    """One utterance as a measure saw it."""
    values: dict[str, float | None]  # by column; None where the measure has no value for this audio
    notes: tuple[str, ...] = ()  # why a value is missing, or what was done to the audio (looped, silent)
    embedding: tuple[float, ...] = ()  # a voice embedding, for similarity between utterances and voices

    def __post_init__(self):
        for column, value in self.values.items():
            if value is not None and not np.isfinite(value):
                raise ValueError(f"{column} = {value}: a measure gives a finite number or None, never NaN")

    def noted(self, notes: tuple[str, ...]) -> Scores:
        """The same scores with the stage's notes on reading the needs (an unreadable reference) after its own."""
        return replace(self, notes=(*self.notes, *notes)) if notes else self


class Measure(Protocol):
    """Loaded once per worker. `score` is called from several threads at once, one utterance each, so that every
    utterance is computed alone on one thread: its value cannot depend on its neighbours or the thread count."""

    def score(self, audio: np.ndarray, **needs) -> Scores:
        """`audio`: float32 mono at the declared rate (16 kHz: as the ASR heard it); `needs`: each need the
        measure declared, by its name (speaker_reference=, natural=: float32 mono at the same rate, or None where
        the row has none or it cannot be read; text=: a str)."""


@dataclass(frozen=True)
class Declaration:
    name: str
    columns: dict[str, str]  # column → what it means, for the CSV's reader
    source: Callable[[], Source]  # the model, found before any work
    load: Callable[[Source], Measure]
    needs: tuple[str, ...] = ()  # besides the audio, of NEEDS: each passed to score() by its name
    rate: int = 16000  # the sample rate it hears the utterance (and its needs' audio) at
    network: bool = False  # needs a network to run: left out of the default selection
    # whether the package holding its model is installed: a measure of an optional package is left out of the
    # default selection where it is not (asked for by name, it says how to install it)
    installed: Callable[[], bool] = lambda: True
    paper: str = ""  # where its numbers come from, for the docs and the report
    better: str = "higher"  # which way of its columns is better: higher or lower (compare-runs' release gate)
    comparable: str = ""  # what its values can stand beside, said wherever they are shown
    predicts: str = "mos"  # the listening test whose scale its columns estimate (mos, smos), or "" for none

    def __post_init__(self):
        unknown = [n for n in self.needs if n not in NEEDS]
        if unknown:
            renamed = " ('speaker reference' is now speaker_reference, passed to score() by that keyword)" \
                if "speaker reference" in unknown else ""
            raise ConfigError(f"measure {self.name!r} needs {', '.join(map(repr, unknown))}: not a need a speech "
                              f"row carries; declare needs from {', '.join(NEEDS)}{renamed}")

    def described(self) -> Described:
        return Described(name=self.name, columns=dict(self.columns), paper=self.paper, better=self.better,
                         comparable=self.comparable)


@dataclass(frozen=True, kw_only=True)
class Described:
    """A measure as a run records it in measures.json: what a reader of the run needs, without its code."""
    name: str
    columns: dict[str, str]  # column → what it means
    paper: str
    better: str  # higher or lower
    comparable: str  # what its values can stand beside
    # column → the column it is a function of (a calibration's straight line): shown beside it, never a second test
    derived: dict[str, str] = field(default_factory=dict)

    def as_json(self) -> dict:
        out = {"columns": self.columns, "paper": self.paper, "better": dict.fromkeys(self.columns, self.better),
               "comparable": self.comparable}
        return {**out, "derived_from": self.derived} if self.derived else out

    @classmethod
    def from_json(cls, name: str, data: dict) -> Described:
        derived = dict(data.get("derived_from", {}))
        if name == calibration.NAME and not derived:  # written before the columns said so: the name says it
            derived = {c: c.removeprefix(calibration.PREFIX) for c in data.get("columns", {})}
        return cls(name=name, columns=dict(data.get("columns", {})), paper=data.get("paper", ""),
                   better=next(iter(data.get("better", {}).values()), "higher"),
                   comparable=data.get("comparable", ""), derived=derived)


def described(text: dict) -> dict[str, Described]:
    """measures.json, read: each measure of the run, by name."""
    return {name: Described.from_json(name, data) for name, data in text.items()}


@dataclass(frozen=True)
class Assessment:
    """The measures of a run, as the assess stage wrote them: each speech row's values and notes, each row's voice
    embedding by its id, and each measure as the run describes it."""
    rows: list  # Measured
    embeddings: dict[str, np.ndarray]
    declared: dict[str, Described]


class MeasureCatalog(Catalog):
    """Measures by name: each is one file of this package (or a plugin's) that registers its Declaration."""

    def predicts(self, column: str) -> str:
        """The listening scale a measure column estimates: as its measure declares; none for a calibrated column
        (already a listening test's); MOS for a column of a measure not installed here."""
        if column.startswith(calibration.PREFIX):
            return ""
        return next((self.get(n).predicts for n in self.names() if column in self.get(n).columns), "mos")

    def default(self) -> list[str]:
        """What `--measures default` runs: every measure that needs no network and whose model is installed, but
        those against a natural recording, which few runs have (they run when named: --measures default,mcd)."""
        return [n for n in self.names() if not self.get(n).network and self.get(n).installed()
                and NATURAL not in self.get(n).needs]

    def check_all(self, names: list[str]) -> None:
        for name in names:
            if name not in ("default", "none"):
                self.get(name)

    def columns(self, names: list[str]) -> dict[str, str]:
        """Every column of the selected measures, in their order: column → meaning."""
        return {c: meaning for n in names for c, meaning in self.get(n).columns.items()}


MEASURES = MeasureCatalog(__package__, "speech_eval.measures", "assess.measures",
                          ("base", "assessor", "calibration"))


@dataclass(frozen=True)
class AssessConfig:
    """The `assess` config section: which measures score each utterance, and the speaker references."""
    measures: list[str] = option(["default"], lambda: "comma-separated measures, or none; default: every measure "
                                 f"that needs no network and whose model is installed ({', '.join(MEASURES.default())})",
                                 flag="--measures", check=MEASURES.check_all)
    speaker_references: list[str] = option([], "voice=reference.wav pairs: the audio each voice should sound like, "
                                           "for speaker_sim (an --audio-manifest gives it per row instead)",
                                           check=lambda pairs: [reference_pair(p) for p in pairs])
    threads: int = option(0, "utterances scored side by side, each on one thread; 0: one per core, at most 8",
                          at_least=0, speed_only=True)
    calibration: str = option("", "a listening test's calibration.json (`listen results`): a calibrated_<measure> "
                              "column beside each measure it fits, on that test's listener scale",
                              check=lambda path: calibration.read(path) if path else None)


def selected(options: AssessConfig) -> list[str]:
    names = [n for n in options.measures if n != "none"]
    return [m for n in names for m in (MEASURES.default() if n == "default" else [n])]


def reference_pair(text: str) -> tuple[str, str]:
    voice, sep, path = text.partition("=")
    if not sep or not voice or not path:
        raise ConfigError(f"assess.speaker_references: {text!r}; give voice=path, e.g. piper:joe=/data/joe_ref.wav")
    return voice, path
