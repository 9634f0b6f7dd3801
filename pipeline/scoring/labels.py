"""sclite's labeled utterance report (`-o lur`, one of the reports NIST's hubscr.pl writes): the WER of each test
subset an stm reference names. Its comment lines define the labels (`;; LABEL "F" "Female" "Female speakers"`) and
the categories they fall in (`;; CATEGORY "1" "Sex" ""`); a segment carries its labels before its text (`<O,F>`),
each in the place of its category. A label's counts are those of the segments that carry it, for each speaker and
for the whole set; its Mean, S.D. and Median are over the speakers with reference words, as sclite's rows are.

As sclite's lur.c reads them: a definition line starts `;; LABEL ` or `;; CATEGORY ` (case as written) and holds
three quoted fields, or is passed over; a definition written twice counts once; a segment's label ids match the
defined ones whatever their case, and an empty place (`<O,,M>`) keeps the places after it. Where sclite stops (a
label not defined, one label in two places), no subset is scored and the reason is given (ValueError)."""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass
from typing import Iterable, Mapping

from pipeline.io.inputs import text_lines
from pipeline.scoring.speakers import Speaker

_QUOTED = re.compile(r'"([^"]*)"\s*"([^"]*)"\s*"([^"]*)"')  # strchr's quotes: id, title, description


@dataclass(frozen=True, slots=True)
class Definition:
    id: str
    title: str
    description: str


@dataclass(frozen=True, kw_only=True)
class Defined:
    """The labels and categories an stm defines, in the order it defines them."""
    labels: tuple[Definition, ...]
    categories: tuple[Definition, ...]

    def category(self, place: int | None) -> str:
        """The title of the category of a label's place: sclite lists the categories in the places' order."""
        return self.categories[place].title if place is not None and place < len(self.categories) else ""

    def index(self, label_id: str) -> int | None:
        folded = label_id.casefold()
        return next((i for i, d in enumerate(self.labels) if d.id.casefold() == folded), None)


def defined(path: str, flag: str = "--ref") -> Defined | None:
    """The stm's definitions; None where it defines no label."""
    found: dict[str, dict[Definition, None]] = {"LABEL": {}, "CATEGORY": {}}
    for line in text_lines(path, flag):
        for kind, held in found.items():
            if line.startswith(f";; {kind} "):
                fields = _QUOTED.search(line)
                if fields:
                    held.setdefault(Definition(*fields.groups()))
    if not found["LABEL"]:
        return None
    return Defined(labels=tuple(found["LABEL"]), categories=tuple(found["CATEGORY"]))


def places(carried: str) -> list[tuple[int, str]]:
    """(place, id) of each label a segment's `<...>` field names, cut as sclite cuts it."""
    out, place, rest = [], 0, carried[1:]
    while rest and rest[0] != ">":
        if rest[0] == ",":
            rest = rest[1:]
        else:
            name = re.match(r"[^<,>]*", rest).group()
            if not name:
                break
            out.append((place, name))
            rest = rest[len(name) + 1:]
        place += 1
    return out


def carried_by(definitions: Defined, segments: Mapping[str, tuple[str, int]], path: str
               ) -> tuple[dict[str, tuple[int, ...]], dict[int, int]]:
    """Each utterance's labels (indices into definitions.labels) from its segment's `<...>` field and stm line
    (`segments`: utterance id → both), and each used label's place; a ValueError where sclite stops."""
    carried, place_of = {}, {}
    for uid, (field, line) in segments.items():
        found = []
        for place, name in places(field):
            i = definitions.index(name)
            if i is None:
                raise ValueError(f"{path} line {line}: label {name!r} of {field} is not defined; sclite -o lur stops "
                                 f"there: define it (`;; LABEL \"{name}\" \"title\" \"description\"`)")
            if place_of.setdefault(i, place) != place:
                raise ValueError(f"{path} line {line}: label {name!r} of {field} is in place {place + 1}, and in "
                                 f"place {place_of[i] + 1} elsewhere; sclite -o lur stops there: a label belongs "
                                 "to one category")
            found.append(i)
        carried[uid] = tuple(found)
    return carried, place_of


@dataclass(frozen=True, slots=True, kw_only=True)
class LabelSummary:
    """A label's counts for one speaker, or its whole set (`speaker` empty: sclite's Set Sum/Avg row, with the Mean,
    S.D. and Median rows' WER over its speakers)."""
    asr: str  # the system (score's --hyp NAME), empty for a single --hyp
    category: str  # the title of the category of the label's place
    label: str
    title: str
    speaker: str
    unit: str  # what ref_words and errors count: word, or character
    n_utterances: int
    ref_words: int  # sclite's #Wrd
    errors: int
    wer: float | None  # errors / ref_words (sclite's %WE); None without reference words
    speakers: int | None  # the whole set's: speakers with reference words under the label
    mean_wer: float | None  # their WERs' mean, S.D. (n − 1; 0 for one) and median, as sclite's rows
    sd_wer: float | None
    median_wer: float | None

    def __post_init__(self):
        if min(self.n_utterances, self.ref_words, self.errors) < 0:
            raise ValueError(f"label {self.label!r}, speaker {self.speaker!r}: a count below zero")
        if self.speaker and self.speakers is not None:
            raise ValueError(f"label {self.label!r}: a speaker's row has no speakers of its own")


class Labelled:
    """Each (system, label, speaker)'s scored utterances, reference words and errors, speakers in the order they
    first appear, as sclite lists them."""

    def __init__(self, definitions: Defined, carried: Mapping[str, tuple[int, ...]], place_of: Mapping[int, int],
                 speaker: Speaker) -> None:
        self.definitions, self.carried, self.place_of, self.speaker = definitions, carried, place_of, speaker
        self.counts: dict[tuple[str, int, str], list[int]] = {}
        self.systems: dict[str, None] = {}
        self.speakers: dict[str, None] = {}

    def add(self, uid: str, asr: str, ref_words: int, errors: int) -> None:
        self.systems.setdefault(asr)
        speaker = self.speaker(uid)
        self.speakers.setdefault(speaker)
        for label in self.carried.get(uid, ()):
            c = self.counts.setdefault((asr, label, speaker), [0, 0, 0])
            c[0] += 1
            c[1] += ref_words
            c[2] += errors

    def rows(self, unit: str) -> list[LabelSummary]:
        out = []
        for asr in self.systems:
            for i, d in enumerate(self.definitions.labels):
                held = [(s, self.counts[asr, i, s]) for s in self.speakers if (asr, i, s) in self.counts]
                cells = [(speaker, c) for speaker, c in held if c[1] or c[2]]  # where sclite's cell is not blank
                common = dict(asr=asr, category=self.definitions.category(self.place_of.get(i)), label=d.id,
                              title=d.title, unit=unit)
                n, words, errors = (sum(c[k] for _, c in held) for k in range(3))
                out.append(LabelSummary(**common, speaker="", n_utterances=n, ref_words=words, errors=errors,
                                        wer=_rate(errors, words), **_spread([c[2] / c[1] for _, c in cells if c[1]])))
                out += [LabelSummary(**common, speaker=speaker, n_utterances=c[0], ref_words=c[1], errors=c[2],
                                     wer=_rate(c[2], c[1]), speakers=None, mean_wer=None, sd_wer=None,
                                     median_wer=None) for speaker, c in cells]
        return out


def _rate(errors: int, words: int) -> float | None:
    return round(errors / words, 4) if words else None


def _spread(rates: list[float]) -> dict:
    """A set row's speakers and their WERs' mean, S.D. and median, as sclite's calc_mean_var_std_dev_Zstat_double
    gives them (an S.D. of 0 for one speaker)."""
    if not rates:
        return dict(speakers=0, mean_wer=None, sd_wer=None, median_wer=None)
    return dict(speakers=len(rates), mean_wer=round(statistics.mean(rates), 4),
                sd_wer=round(statistics.stdev(rates), 4) if len(rates) > 1 else 0.0,
                median_wer=round(statistics.median(rates), 4))


def lines(rows: Iterable[LabelSummary], rate: str = "WER") -> list[str]:
    """Each system's subsets, a line each: every label's rate over its whole set and its reference words."""
    by_system: dict[str, list[LabelSummary]] = {}
    for r in rows:
        if not r.speaker:
            by_system.setdefault(r.asr, []).append(r)
    return [f"{asr + ': ' if asr else ''}{rate} by label (sclite -o lur): " + ", ".join(
        f"{r.title or r.label} {'-' if r.wer is None else f'{r.wer:.3f}'} ({r.ref_words} {r.unit}s)" for r in sets)
        for asr, sets in by_system.items()]
