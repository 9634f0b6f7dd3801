"""How well a system's word confidences (a ctm's sixth field) tell its right words from its wrong ones: sclite's
normalized cross entropy (NCE, the column its `-o sum` report adds where a ctm has confidences; sctk's scores.c,
compute_SCORE_nce). Each hypothesis word the alignment keeps (correct, substituted or inserted) scores log2 of its
confidence if it is correct and log2 of one minus it otherwise, each confidence held within [1e-7, 1 − 1e-7];
with p the share of those words that are correct and H(C) = −(n_correct·log2 p + n_wrong·log2(1 − p)), the words'
entropy given p alone,

    NCE = (H(C) + Σ log2 ĉ (correct) + Σ log2 (1 − ĉ) (wrong)) / H(C).

1 is a system that knows each word's fate, 0 one whose confidences say no more than p does, and below 0 worse
than p. It is computed for each speaker, and for the whole set from the set's counts; the set's Mean, S.D. and
Median are over every speaker, one with no hypothesis word at 0, as sclite's are. Where every word of a speaker
is right or every one wrong, H(C) is 0 and there is no NCE (sclite prints nan)."""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import NamedTuple, Sequence

from pipeline.core.records import ALIGNED
from pipeline.scoring.align import HIT, OPTIONAL_INSERTION, REF_ONLY
from pipeline.scoring.speakers import Speaker
from pipeline.scoring.tally import rounded
from pipeline.scoring.utterances import ScoredUtterance

FLOOR, CEILING = 0.0000001, 0.9999999  # sclite's: no log of 0
LOG2E = 1.4426950408889634074  # sclite's M_LOG2E: its logs are natural ones times it
CORRECT = (HIT, OPTIONAL_INSERTION)  # of the codes of a hypothesis word; the others are SUBSTITUTION and INSERTION
GAPS = bytes(REF_ONLY)  # the codes of a reference word with no hypothesis word across


class Bits(NamedTuple):
    """An utterance's hypothesis words scored by their confidences."""
    correct: float  # Σ log2 ĉ over its correct words
    wrong: float  # Σ log2 (1 − ĉ) over the others
    words: int
    outside: int  # confidences outside [0, 1], which sclite warns of and uses held within its floor and ceiling
    placed: bool = True  # False: the normalizer rewrote its words together, and no word's confidence is known


UNPLACED = Bits(0.0, 0.0, 0, 0, placed=False)


def bits(codes: bytes, confidences: Sequence[float]) -> Bits:
    """`confidences`: one for each normalized hypothesis word, in order; `codes`: the utterance's alignment."""
    correct = wrong = 0.0
    outside = 0
    heard = codes.translate(None, GAPS)  # a code for each hypothesis word
    for c, conf in zip(heard, confidences):
        if not 0.0 <= conf <= 1.0:
            outside += 1
        conf = FLOOR if conf < FLOOR else CEILING if conf > CEILING else conf
        if c in CORRECT:
            correct += math.log(conf) * LOG2E
        else:
            wrong += math.log(1.0 - conf) * LOG2E
    return Bits(correct, wrong, len(heard), outside)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfidenceSummary:
    """A system's NCE for one speaker, or for its whole set (`speaker` empty: sclite's Sum/Avg row, with its Mean,
    S.D. and Median rows' NCE over the speakers)."""
    asr: str  # the system (score's --hyp NAME), empty for a single --hyp
    speaker: str
    unit: str  # what hyp_words counts: word, or character
    hyp_words: int  # the hypothesis words the alignment keeps: correct, substituted, inserted
    correct: int
    nce: float | None  # None where every word is right, or every one wrong (H(C) = 0)
    outside: int  # confidences outside [0, 1]
    speakers: int | None  # the set's: its speakers
    mean_nce: float | None
    sd_nce: float | None  # n − 1; 0 for one speaker
    median_nce: float | None

    def __post_init__(self):
        if not 0 <= self.correct <= self.hyp_words:
            raise ValueError(f"speaker {self.speaker!r}: {self.correct} correct of {self.hyp_words} words")
        if self.speaker and self.speakers is not None:
            raise ValueError(f"speaker {self.speaker!r}: a speaker's row has no speakers of its own")


def nce(correct: int, wrong: int, bits_correct: float, bits_wrong: float) -> float | None:
    """sclite's NCE of `correct` and `wrong` words (its counts: hits; substitutions and insertions) and their bits."""
    if not correct or not wrong:
        return None
    p = correct / (correct + wrong)
    entropy = -(correct * math.log(p) * LOG2E + wrong * math.log(1.0 - p) * LOG2E)
    return (entropy + bits_correct + bits_wrong) / entropy


class Confidences:
    """Each (system, speaker)'s counts and bits, speakers in the order they first appear (as Speakers lists them);
    a system whose confidences could not be given to its normalized words (`unplaced`) has no NCE."""

    def __init__(self, speaker: Speaker) -> None:
        self.speaker = speaker
        self.counts: dict[tuple[str, str], list] = {}  # [hits, substitutions + insertions, bits×2, words, outside]
        self.unplaced: dict[str, int] = {}  # system → its utterances whose words the normalizer rewrote together

    def add(self, u: ScoredUtterance, found: Bits) -> None:
        if u.status not in ALIGNED:
            return
        c = self.counts.setdefault((u.asr, self.speaker(u.sentence_id)), [0, 0, 0.0, 0.0, 0, 0])
        c[0] += u.hits
        c[1] += u.substitutions + u.insertions
        if not found.placed:
            self.unplaced[u.asr] = self.unplaced.get(u.asr, 0) + 1
            return
        c[2] += found.correct
        c[3] += found.wrong
        c[4] += found.words
        c[5] += found.outside

    def merge(self, later: Confidences) -> None:
        for key, theirs in later.counts.items():
            mine = self.counts.setdefault(key, [0, 0, 0.0, 0.0, 0, 0])
            for i, x in enumerate(theirs):
                mine[i] += x
        for asr, n in later.unplaced.items():
            self.unplaced[asr] = self.unplaced.get(asr, 0) + n

    def rows(self, unit: str) -> list[ConfidenceSummary]:
        out = []
        for asr in dict.fromkeys(a for a, _ in self.counts):
            if asr in self.unplaced:
                continue
            held = [(s, c) for (a, s), c in self.counts.items() if a == asr]
            each = [0.0 if not c[4] else nce(c[0], c[1], c[2], c[3]) for _, c in held]
            total = [sum(c[k] for _, c in held) for k in range(6)]
            out.append(ConfidenceSummary(asr=asr, speaker="", unit=unit, hyp_words=total[0] + total[1],
                                         correct=total[0], nce=rounded(nce(*total[:4])), outside=total[5],
                                         **_spread(each)))
            out += [ConfidenceSummary(asr=asr, speaker=s, unit=unit, hyp_words=c[0] + c[1], correct=c[0],
                                      nce=rounded(n), outside=c[5], speakers=None, mean_nce=None, sd_nce=None,
                                      median_nce=None) for (s, c), n in zip(held, each)]
        return out


def _spread(values: list[float | None]) -> dict:
    """The set's speakers and their NCEs' mean, S.D. and median, as sclite's calc_mean_var_std_dev_Zstat_double gives
    them; none where a speaker has none (sclite's arithmetic on nan)."""
    if any(v is None for v in values):
        return dict(speakers=len(values), mean_nce=None, sd_nce=None, median_nce=None)
    return dict(speakers=len(values), mean_nce=rounded(statistics.mean(values)),
                sd_nce=rounded(statistics.stdev(values)) if len(values) > 1 else 0.0,
                median_nce=rounded(statistics.median(values)))


def lines(rows: list[ConfidenceSummary], unplaced: dict[str, int], normalizer: str) -> list[str]:
    """Each system's NCE over its set, a line each, and why a system whose ctm has confidences has none."""
    out = [f"{r.asr + ': ' if r.asr else ''}NCE of the ctm's word confidences (sclite's normalized cross entropy): "
           f"{'-' if r.nce is None else f'{r.nce:.3f}'} over {r.hyp_words} hypothesis {r.unit}s"
           for r in rows if not r.speaker]
    out += [f"{asr + ': ' if asr else ''}no NCE: --normalize {normalizer} rewrites the words of {n} "
            f"utterance{'s' * (n != 1)} together, so their confidences cannot follow them; --normalize sclite keeps "
            "each word apart" for asr, n in unplaced.items()]
    return out
