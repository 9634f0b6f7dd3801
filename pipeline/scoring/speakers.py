"""Each speaker's counts, as sclite's `-o sum` and `-o rsum` give them a row: the speaker is the utterance id up to
its first hyphen, else its first underscore (sclite's `-i spu_id`: `(4077-13754-0000)` is speaker 4077,
`(sw02001_A_0001)` sw02001); an id with neither is its own speaker, where sclite stops with an error and counts the
utterance to the speaker before it. Only counts are kept, so a corpus's speakers cost what its groups do. Two
systems' speakers are compared as NIST sc_stats compares them (compare)."""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from itertools import combinations
from typing import Callable

from pipeline.core.records import ALIGNED
from pipeline.scoring import paired
from pipeline.scoring.utterances import ScoredUtterance


Speaker = Callable[[str], str]  # how an utterance's id names its speaker


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
    n_utterances: int  # scored rows, those with an empty reference among them: sclite's # Snt
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


COUNTS = ("n_utterances", "ref_words", "hits", "substitutions", "deletions", "insertions", "sentence_errors")


class Speakers:
    """Each (system, speaker)'s counts, in the order they first appear, as sclite lists its speakers; `speaker`
    reads an utterance's speaker from its id (an stm's utterances name theirs otherwise: scoring/stm.py)."""

    def __init__(self, speaker: Speaker = speaker_of) -> None:
        self.counts: dict[tuple[str, str], list[int]] = {}
        self.speaker = speaker

    def add(self, u: ScoredUtterance) -> None:
        if u.status not in ALIGNED:
            return
        key = u.asr, self.speaker(u.sentence_id)
        c = self.counts.get(key)
        if c is None:
            c = self.counts[key] = [0] * len(COUNTS)
        c[0] += 1  # in COUNTS' order, written out: a loop over them was most of the cost of a row
        c[1] += u.ref_words
        c[2] += u.hits
        c[3] += u.substitutions
        c[4] += u.deletions
        c[5] += u.insertions
        c[6] += u.errors > 0

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


@dataclass(frozen=True, slots=True, kw_only=True)
class SpeakerComparison:
    """Two systems' speakers paired, as NIST sc_stats pairs them for its sign and Wilcoxon tests: each speaker a
    block, its WER (%) in each system the two values (MAPSSWE, in comparisons.csv, is over sentence segments)."""
    a: str
    b: str
    speakers: int  # speakers with reference words
    sign_b_worse: int  # speakers whose WER is higher in b (by more than sc_stats' 0.005 points)
    sign_b_better: int
    sign_ties: int
    sign_p: float  # the exact two-sided binomial, ties split as sc_stats splits them
    sign_p_holm: float  # Holm-corrected over every two systems
    wilcoxon_w_plus: float  # sc_stats' rank sums (b − a), a zero difference's rank split between them
    wilcoxon_w_minus: float
    wilcoxon_z: float | None  # sc_stats' Z, which it reads against the normal distribution
    signed_rank_p: float  # the exact Wilcoxon signed-rank test (zero differences dropped; normal past 400)
    signed_rank_p_holm: float
    note: str  # what the tests could not find with this many speakers, or ""


def compare(rows: list[SpeakerSummary]) -> list[SpeakerComparison]:
    """Every two systems compared by speaker (their rows, Speakers.rows) on the speakers both have with reference
    words."""
    counts: dict[str, dict[str, tuple[int, int]]] = {}  # system → speaker → (errors, reference words)
    for r in rows:
        if r.ref_words:
            counts.setdefault(r.asr, {})[r.speaker] = r.errors, r.ref_words
    found = []
    for a, b in combinations(counts, 2):
        shared = [s for s in counts[a] if s in counts[b]]
        pa = [100 * counts[a][s][0] / counts[a][s][1] for s in shared]
        pb = [100 * counts[b][s][0] / counts[b][s][1] for s in shared]
        found.append((a, b, len(shared), paired.sign_test(pb, pa), paired.wilcoxon(pb, pa),
                      paired.signed_rank([y - x for x, y in zip(pa, pb)])))
    sign_holm = paired.holm([sign.p for *_, sign, _, _ in found])
    rank_holm = paired.holm([ranked.p for *_, ranked in found])
    out = []
    for (a, b, n, sign, w, ranked), sign_q, rank_q in zip(found, sign_holm, rank_holm):
        floor = min(1.0, paired.smallest_p(n) * len(found))  # every speaker one way, in the first pair Holm takes
        note = (f"with {n} speakers neither test's p can go below {floor:.3g}"
                + (f" (Holm-corrected over {len(found)} pairs)" if len(found) > 1 else "")
                + ": no difference could be found" if floor >= paired.ALPHA else "")
        out.append(SpeakerComparison(
            a=a, b=b, speakers=n, sign_b_worse=sign.positive, sign_b_better=sign.negative, sign_ties=sign.ties,
            sign_p=float(f"{sign.p:.4g}"), sign_p_holm=float(f"{sign_q:.4g}"), wilcoxon_w_plus=w.w_plus,
            wilcoxon_w_minus=w.w_minus, wilcoxon_z=None if w.z is None else round(w.z, 3),
            signed_rank_p=float(f"{ranked.p:.4g}"), signed_rank_p_holm=float(f"{rank_q:.4g}"), note=note))
    return out


def spread(rows: list[SpeakerSummary], rate: str = "WER") -> list[str]:
    """Each system's WER across its speakers, a line each: the mean, S.D. and median of the speakers' rates (sclite's
    Mean, S.D. and Median rows of its Err column, speakers with no reference word left out) and the speaker with the
    highest rate."""
    out = []
    for asr in dict.fromkeys(r.asr for r in rows):
        rated = [r for r in rows if r.asr == asr and r.ref_words]
        if len(rated) < 2:
            continue
        rates = [r.errors / r.ref_words for r in rated]
        worst = max(rated, key=lambda r: r.errors / r.ref_words)
        out.append(f"{asr + ': ' if asr else ''}{rate} by speaker ({len(rated)}): mean {statistics.mean(rates):.3f}, "
                   f"S.D. {statistics.stdev(rates):.3f}, median {statistics.median(rates):.3f}; highest "
                   f"{worst.speaker} {worst.errors / worst.ref_words:.3f}")
    return out
