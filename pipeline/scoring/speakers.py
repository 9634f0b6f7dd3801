"""Each speaker's counts, as sclite's `-o sum` and `-o rsum` give them a row: the speaker is the utterance id up to
its first hyphen, else its first underscore (sclite's `-i spu_id`: `(4077-13754-0000)` is speaker 4077,
`(sw02001_A_0001)` sw02001); an id with neither is its own speaker, where sclite stops with an error and counts the
utterance to the speaker before it. Only counts are kept, so a corpus's speakers cost what its groups do."""
from __future__ import annotations

from dataclasses import dataclass

from pipeline.core.records import Status
from pipeline.scoring.utterances import ScoredUtterance


def speaker_of(sentence_id: str) -> str:
    for mark in "-_":
        head, found, _ = sentence_id.partition(mark)
        if found:
            return head
    return sentence_id


@dataclass(frozen=True, slots=True, kw_only=True)
class SpeakerSummary:
    asr: str  # the system (score's --hyp NAME), empty for a single --hyp
    speaker: str
    unit: str  # what ref_words and the errors count: word, or character (scoring/language.py)
    n_utterances: int  # scored rows: sclite's # Snt
    n_excluded: int  # rows with an empty reference after normalization: no rate, left out as in summary.csv
    ref_words: int  # sclite's # Wrd
    hits: int  # Corr
    substitutions: int
    deletions: int
    insertions: int
    errors: int  # Err
    sentence_errors: int  # scored rows with any error: S.Err
    wer: float | None  # errors / ref_words, as sclite's Err %; None without reference words

    def __post_init__(self):
        if self.hits + self.substitutions + self.deletions != self.ref_words:
            raise ValueError(f"speaker {self.speaker!r}: hits, substitutions and deletions do not add up to "
                             f"its {self.ref_words} reference {self.unit}s")
        if self.substitutions + self.deletions + self.insertions != self.errors:
            raise ValueError(f"speaker {self.speaker!r}: substitutions, deletions and insertions are not its errors")


COUNTS = ("n_utterances", "n_excluded", "ref_words", "hits", "substitutions", "deletions", "insertions",
          "sentence_errors")


class Speakers:
    """Each (system, speaker)'s counts, in the order they first appear, as sclite lists its speakers."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], list[int]] = {}

    def add(self, u: ScoredUtterance) -> None:
        key = u.asr, speaker_of(u.sentence_id)
        c = self.counts.get(key)
        if c is None:
            c = self.counts[key] = [0] * len(COUNTS)
        if u.status == Status.OK:
            for i, n in enumerate((1, 0, u.ref_words, u.hits, u.substitutions, u.deletions, u.insertions,
                                   u.errors > 0)):
                c[i] += n
        else:
            c[1] += 1

    def merge(self, later: Speakers) -> None:
        """Take in the counts of the rows that come after these (scored elsewhere: files.stream)."""
        for key, theirs in later.counts.items():
            mine = self.counts.setdefault(key, [0] * len(COUNTS))
            for i, n in enumerate(theirs):
                mine[i] += n

    def rows(self, unit: str) -> list[SpeakerSummary]:
        out = []
        for (asr, speaker), c in self.counts.items():
            kept = dict(zip(COUNTS, c))
            errors = kept["substitutions"] + kept["deletions"] + kept["insertions"]
            out.append(SpeakerSummary(asr=asr, speaker=speaker, unit=unit, errors=errors,
                                      wer=round(errors / kept["ref_words"], 4) if kept["ref_words"] else None,
                                      **kept))
        return out
