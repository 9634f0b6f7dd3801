"""sclite's alternations in a trn reference: `we are { going to / gonna } go`, `hello { there / @ } world`. Each
`{ … / … }` holds the ways the words may have been said, `@` the way of saying nothing; NIST's references for
conversational speech write them (hesitations, contractions, spellings of names), and sclite scores a hypothesis
against whichever way aligns best, counting that way's words alone.

A reference with alternations is scored here as sclite scores it: each of its readings (one alternative of every
alternation) is aligned with the hypothesis, and the one of least cost under sclite's weights is the reference;
among equally cheap readings, the one with the most hits, then the most words, then the first (where sclite's
search through its network of alternatives ends, on random references). What is then scored, written and shown is
that reading, as sclite's pralign shows it.

Its cost is sclite's on every reference; its counts are sclite's on all but a few in a thousand random ones
(tests/test_alternations.py): where a tie is broken inside a reading, sclite's network of alternatives may pick
another alignment of the same cost (a hit, two deletions and two insertions for three substitutions)."""
from __future__ import annotations

import itertools
import re

from pipeline.scoring.align import DEL, INS, SUB, align_codes, tally
from pipeline.scoring.normalize import Normalizer

NOTHING = "@"
MOST_READINGS = 4096  # a reference's readings are aligned one by one: 12 two-way alternations in one utterance
_ALTERNATION = re.compile(r"\{([^{}]*)\}")


def held(reference: str) -> bool:
    """Whether a reference writes an alternation (a brace of either side: a lone one is an error, not a word)."""
    return "{" in reference or "}" in reference


def readings(reference: str) -> list[str]:
    """Every way of saying `reference`, in sclite's order (each alternation's first alternative first). ValueError
    says what is wrong with a brace or an alternation."""
    pieces, choices, at = [], [], 0
    for m in _ALTERNATION.finditer(reference):
        pieces.append(reference[at:m.start()])
        alternatives = [" ".join(w for w in a.split() if w != NOTHING) for a in m.group(1).split("/")]
        if len(alternatives) < 2:
            raise ValueError(f"{m.group()} has one alternative: write `{{ a / b }}`, `@` for saying nothing")
        choices.append(alternatives)
        at = m.end()
    rest = reference[at:]
    if "{" in rest or "}" in rest or any("{" in p or "}" in p for p in pieces):
        raise ValueError("a brace without its pair (alternations are `{ a / b }`, never nested)")
    pieces.append(rest)
    count = 1
    for c in choices:
        count *= len(c)
    if count > MOST_READINGS:
        raise ValueError(f"{count:,} readings (its alternations multiply); at most {MOST_READINGS:,} are scored")
    out = []
    for way in itertools.product(*choices):
        words = []
        for piece, said in zip(pieces, (*way, "")):  # the text before each alternation, then the way it is said
            words += piece.split() + said.split()
        out.append(" ".join(words))
    return out


def resolve(reference: str, hypothesis: str, normalizer: Normalizer) -> str:
    """The reading of `reference` that `hypothesis` is scored against: the least costly to align, after
    `normalizer`, under sclite's weights, as the module's docstring says."""
    ways = readings(reference)
    if len(ways) == 1:
        return ways[0]
    refs = [r.split() for r in normalizer.references(ways)]
    hyp = normalizer.hypotheses([hypothesis])[0].split()
    ranks = []
    for codes in align_codes(refs, [hyp] * len(refs)):
        hits, substitutions, deletions, insertions = tally(codes)
        cost = SUB * substitutions + DEL * deletions + INS * insertions
        ranks.append((cost, -hits, -(hits + substitutions + deletions)))
    return ways[ranks.index(min(ranks))]
