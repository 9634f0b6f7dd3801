"""sclite's alternations in a trn reference: `we are { going to / gonna } go`, `hello { there / @ } world`. Each
`{ … / … }` holds the ways the words may have been said, `@` the way of saying nothing; NIST's references for
conversational speech write them (hesitations, contractions, spellings of names), and sclite scores a hypothesis
against whichever way aligns best, counting that way's words alone.

sclite aligns the hypothesis with the network of the reference's ways (sctk's net_dp.c), and so does `align`
here, step for step: its weights (`@` costs 0.001 to pass over, so a way that says something wins a tie), its
single-precision sums, its preference on a tie (a hit or substitution, then a deletion, then an insertion; among
the ways into a word, the first written), and its way back from the cheapest end. The tests check every count
against sclite's on random references. What is then scored, written and shown is the way the alignment took, as
sclite's pralign shows it, aligned as sclite aligned it."""
from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np

from pipeline.scoring.align import DELETION, HIT, INSERTION, SUBSTITUTION
from pipeline.scoring.normalize import Normalizer

NOTHING = "@"
_ALTERNATION = re.compile(r"\{([^{}]*)\}")
_F = np.float32  # sclite's costs are C floats: a tie there is a tie in single precision
MOST_CELLS = 16_000_000  # words of the network × of the hypothesis: 192 MB of costs and steps back


def held(reference: str) -> bool:
    """Whether a reference writes an alternation (a brace of either side: a lone one is an error, not a word)."""
    return "{" in reference or "}" in reference


def parse(reference: str) -> list[tuple[str, ...]]:
    """The reference as it is said, in order: text said one way (a 1-tuple), and each alternation's ways (an empty
    one for `@`, saying nothing). ValueError says what is wrong with a brace or an alternation."""
    pieces, at = [], 0
    for m in _ALTERNATION.finditer(reference):
        pieces.append((reference[at:m.start()],))
        ways = tuple(" ".join(w for w in a.split() if w != NOTHING) for a in m.group(1).split("/"))
        if len(ways) < 2:
            raise ValueError(f"{m.group()} has one alternative: write `{{ a / b }}`, `@` for saying nothing")
        pieces.append(ways)
        at = m.end()
    pieces.append((reference[at:],))
    if any("{" in way or "}" in way for piece in pieces for way in piece):
        raise ValueError("a brace without its pair (alternations are `{ a / b }`, never nested)")
    return pieces


class Resolved(NamedTuple):
    """A reference with alternations resolved by its hypothesis: the way it was said (its text as written), and the
    alignment's op codes (align.py's) over that way and the hypothesis, both normalized. None where they are not
    that text's and hypothesis's words as the normalizer gives them whole (one that rewrites across words, a
    hypothesis that writes `@`): then the way's text is aligned as any reference is."""
    reference: str
    codes: bytes | None


class _Network(NamedTuple):
    words: list[str | None]  # each arc's word: arc 0 is the head sclite adds (None), `@` an arc of nothing
    before: list[list[int]]  # the arcs that end where each arc starts, in the order sclite links them
    ends: list[int]  # the arcs into the last node
    way: list[tuple[int, int]]  # each arc's (piece, way)


def _network(pieces: list[list[list[str]]]) -> _Network:
    net, ends = _Network([None], [[]], [], [(-1, 0)]), [0]
    for p, ways in enumerate(pieces):
        joined = []
        for k, words in enumerate(ways):
            last = ends
            for word in words:
                net.words.append(word)
                net.before.append(last)
                net.way.append((p, k))
                last = [len(net.words) - 1]
            joined += last
        ends = joined
    net.ends.extend(ends)
    return net


def _cost(ref: str | None, hyp: str | None) -> np.float32:
    """sclite's weight of a step (sctk's wwd_WORD): None is the gap."""
    if hyp is None:
        return _F(0.001) if ref == NOTHING else _F(3.0)
    if ref is None:
        return _F(0.001) if hyp == NOTHING else _F(3.0)
    if ref == NOTHING and hyp == NOTHING:
        return _F(1.0)
    return _F(0.0) if ref == hyp else _F(4.0)


def align(pieces: list[list[list[str]]], hyp: list[str]) -> tuple[list[int], bytes]:
    """sclite's alignment of `hyp` with a reference's network (each piece its ways, each way its words, `@` alone
    for nothing): the way taken through each piece, and the op codes over its words and `hyp`'s, a `@` on either
    side passed over as sclite passes over it (a `@` is never substituted for a word: passing over it and
    inserting the word costs less)."""
    net = _network(pieces)
    words, heard = net.words, [None, *hyp]
    if len(words) * len(heard) > MOST_CELLS:
        raise ValueError(f"{len(words) - 1:,} words with alternations against a hypothesis of {len(hyp):,}: the "
                         f"alignment would hold {len(words) * len(heard):,} cells, at most {MOST_CELLS:,}; cut the "
                         "utterance into shorter ones")
    cost = np.empty((len(words), len(heard)), dtype=_F)
    back = np.zeros((len(words), len(heard), 2), dtype=np.int32)
    cost[0, 0] = 0
    for b in range(1, len(heard)):
        cost[0, b], back[0, b] = cost[0, b - 1] + _cost(None, heard[b]), (0, b - 1)
    for a in range(1, len(words)):
        p = min(net.before[a], key=lambda x: cost[x, 0])  # min keeps the first of equals, as sclite's strict <
        cost[a, 0], back[a, 0] = cost[p, 0] + _cost(words[a], None), (p, 0)
        for b in range(1, len(heard)):
            inserted = cost[a, b - 1] + _cost(None, heard[b])
            d = min(net.before[a], key=lambda x: cost[x, b])
            deleted = cost[d, b] + _cost(words[a], None)
            s = min(net.before[a], key=lambda x: cost[x, b - 1])
            substituted = cost[s, b - 1] + _cost(words[a], heard[b])
            if substituted <= deleted and substituted <= inserted:
                cost[a, b], back[a, b] = substituted, (s, b - 1)
            elif deleted < inserted:
                cost[a, b], back[a, b] = deleted, (d, b)
            else:
                cost[a, b], back[a, b] = inserted, (a, b - 1)
    a, b = min(net.ends, key=lambda x: cost[x, -1]), len(heard) - 1
    taken, codes = [0] * len(pieces), []
    while a > 0 or b > 0:
        was_a, was_b = (int(x) for x in back[a, b])
        if a > 0:
            taken[net.way[a][0]] = net.way[a][1]
        if was_a == a:
            if heard[b] != NOTHING:
                codes.append(INSERTION)
        elif was_b == b:
            if words[a] != NOTHING:
                codes.append(DELETION)
        elif words[a] != NOTHING or heard[b] != NOTHING:
            codes.append(HIT if words[a] == heard[b] else SUBSTITUTION)
        a, b = was_a, was_b
    return taken, bytes(reversed(codes))


def resolve(reference: str, hypothesis: str, normalizer: Normalizer) -> Resolved:
    """The way `reference` was said, as sclite finds it from `hypothesis` after `normalizer`, and its alignment."""
    pieces = parse(reference)
    said = [[normalizer.references([way])[0].split() or ([] if len(piece) == 1 else [NOTHING]) for way in piece]
            for piece in pieces]
    hyp = normalizer.hypotheses([hypothesis])[0].split()
    taken, codes = align(said, hyp)
    text = " ".join(" ".join(piece[k].split()) for piece, k in zip(pieces, taken) if piece[k].strip())
    words = [w for piece, k in zip(said, taken) for w in piece[k] if w != NOTHING]
    consumed = (sum(c != INSERTION for c in codes), sum(c != DELETION for c in codes))
    if consumed != (len(words), len(hyp)) or normalizer.references([text])[0].split() != words:
        return Resolved(text, None)
    return Resolved(text, codes)
