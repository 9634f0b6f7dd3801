"""sclite's alternations in a trn reference, `we are { going to / gonna } go`, `hello { there / @ } world`, and in a
hypothesis, as a GLM writes them into one (scoring/glm.py). Each `{ … / … }` holds the ways the words may have been
said, `@` the way of saying nothing; NIST's references for conversational speech write them (hesitations,
contractions, spellings of names), and sclite scores a hypothesis against whichever way aligns best, counting that
way's words alone.

sclite aligns the network of the hypothesis' ways (one, where it writes none) with the reference's (sctk's
net_dp.c), and so does `align` here, step for step: its weights (`@` costs 0.001 to pass over, so a way that says
something wins a tie), its single-precision sums, its preference on a tie (a hit or substitution, then a deletion,
then an insertion; among the ways into a word, the first written), and its way back from the cheapest end. The tests
check every count against sclite's on random references. What is then scored, written and shown is the way the
alignment took, as sclite's pralign shows it, aligned as sclite aligned it."""
from __future__ import annotations

import functools
import re
from typing import NamedTuple

import numpy as np

from pipeline.scoring.align import (DELETION, DIAG, HIT, HYP_ONLY, INSERTION, LEFT, OPTIONAL_DELETION,
                                    OPTIONAL_INSERTION, REF_ONLY, SUBSTITUTION, UP)
from pipeline.scoring.language import Characters
from pipeline.scoring.lenient import EQUAL, GAP, NOTHING, OPTIONAL_GAP, PASSING, PLAIN, UNEQUAL, Lenient
from pipeline.scoring.normalize import Normalizer

_ALTERNATION = re.compile(r"\{([^{}]*)\}")
MOST_CELLS = 16_000_000  # words of the network × of the hypothesis: 192 MB of costs and steps back


def held(reference: str) -> bool:
    """Whether a reference writes an alternation (a brace of either side: a lone one is an error, not a word)."""
    return "{" in reference or "}" in reference


def parse(reference: str) -> list[tuple[str, ...]]:
    """The reference as it is said, in order: text said one way (a 1-tuple), and each alternation's ways (an empty
    one for `@`, saying nothing). An alternation inside another's way makes that way as many ways as it has, in the
    order written (`{ a / { b / c } d }` is `a`, `b d`, `c d`), the paths through sclite's network of it (_network).
    ValueError says what is wrong with a brace or an alternation."""
    return _spelled_pieces(_tree(reference))


MOST_WAYS = 1000  # of one alternation, its inner ones multiplied out


class _Alternation(NamedTuple):
    ways: tuple[str, ...]  # every way it spells out, as parse gives them
    written: tuple[tuple[str | _Alternation, ...], ...]  # each way written: its text and the alternations inside it
    nested: bool  # whether any way has an alternation inside it


def _tree(text: str) -> list[str | _Alternation]:
    if not _NESTED.search(text):
        pieces, at = [], 0  # none inside another: most texts, read at regex speed
        for m in _ALTERNATION.finditer(text):
            pieces.append(text[at:m.start()])
            written = m.group(1).split("/")
            if len(written) < 2:
                break  # _sequence says what is wrong
            pieces.append(_Alternation(tuple(map(_said, written)), tuple((a,) for a in written), False))
            at = m.end()
        else:
            pieces.append(text[at:])
            if not any("{" in piece or "}" in piece for piece in pieces if isinstance(piece, str)):
                return pieces
    return _sequence(text, 0, inner=False)[0]


_NESTED = re.compile(r"\{[^}]*\{")  # an alternation opened inside another


def _said(way: str) -> str:
    """A way's words, as parse gives them: `@` says nothing."""
    return " ".join(w for w in way.split() if w != NOTHING)


def _sequence(text: str, at: int, inner: bool) -> tuple[list[str | _Alternation], int]:
    """The pieces of `text` from `at`, plain text and alternations, up to the end or, `inner`, the slash or brace
    that closes a way; and where they end."""
    pieces, start = [], at
    while (found := (_MARK if inner else _BRACE).search(text, at)) is not None:
        at = found.start()
        c = text[at]
        if c == "{":
            pieces.append(text[start:at])
            alternation, at = _alternation(text, at)
            pieces.append(alternation)
            start = at
            continue
        if c == "}" and not inner:
            raise ValueError("a brace without its pair (alternations are `{ a / b }`)")
        break
    else:
        at = len(text)
    pieces.append(text[start:at])
    return pieces, at


_BRACE, _MARK = re.compile(r"[{}]"), re.compile(r"[{}/]")  # what opens or closes an alternation, or a way in one


def _alternation(text: str, at: int) -> tuple[_Alternation, int]:
    """The alternation that opens at `at`, and where it ends."""
    opened, written = at, []
    while True:
        pieces, at = _sequence(text, at + 1, inner=True)
        if at >= len(text):
            raise ValueError("a brace without its pair (alternations are `{ a / b }`)")
        written.append(tuple(pieces))
        if text[at] == "}":
            break
    if len(written) < 2:
        raise ValueError(f"{text[opened:at + 1]} has one alternative: write `{{ a / b }}`, `@` for saying nothing")
    ways = []
    for pieces in written:
        said = [""]
        for piece in pieces:
            said = [f"{a} {b}" for a in said for b in ((piece,) if isinstance(piece, str) else piece.ways)]
        ways += map(_said, said)
    if len(ways) > MOST_WAYS:
        raise ValueError(f"{text[opened:at + 1]} has {len(ways)} ways with those inside it; at most {MOST_WAYS}")
    nested = any(not isinstance(piece, str) for pieces in written for piece in pieces)
    return _Alternation(tuple(ways), tuple(written), nested), at + 1


class Resolved(NamedTuple):
    """A reference with alternations resolved by its hypothesis: the way it was said (its text as written), and the
    alignment's op codes (align.py's) over that way and the hypothesis, both normalized. None where they are not
    that text's and hypothesis's words as the normalizer gives them whole (one that rewrites across words, a
    hypothesis that writes `@`): then the way's text is aligned as any reference is. `hypothesis`: where the
    hypothesis writes alternations, the way it was read (its text as written), which is then what is scored, and
    `heard_ways`: the way taken through each of its pieces (read_positions finds their words among those
    written)."""
    reference: str
    codes: bytes | None
    hypothesis: str | None = None
    heard_ways: tuple[int, ...] = ()
    nulls: int = 0  # `@` the alignment by time took across a word (align), that word scored inserted or deleted


Way = list  # a way's words (str) and the alternations inside it (each a list of Ways), in order


class Nested(list):
    """Ways with an alternation inside one of them."""


class _Network(NamedTuple):
    words: list[str | None]  # each arc's word: arc 0 is the head sclite adds (None), `@` an arc of nothing
    before: list[list[int]]  # the arcs that end where each arc starts, in the order sclite links them
    ends: list[int]  # the arcs into the last node
    way: list[tuple[int, int]]  # each arc's (piece, way); way -1 in a piece with alternations inside others
    paths: dict[int, list[list[int]]]  # each such piece's ways, as their arcs, in the order of spelled(ways)


def _network(pieces: list[list[Way]]) -> _Network:
    """sclite's network of the pieces' ways: an alternation inside a way is a network of its own ways between the
    words around it, as sclite's expand_alternates builds one."""
    net, ends = _Network([None], [[]], [], [(-1, 0)], {}), [0]
    for p, ways in enumerate(pieces):
        if isinstance(ways, Nested):
            ends, net.paths[p] = _arcs(net, ways, ends, p)
            continue
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


def _arcs(net: _Network, ways: list[Way], ends: list[int], p: int) -> tuple[list[int], list[list[int]]]:
    """The arcs of `ways` after the arcs `ends`: the arcs they end with, and each way's arcs (spelled's order)."""
    joined, paths = [], []
    for way in ways:
        last, taken = ends, [[]]
        for item in way:
            if isinstance(item, str):
                net.words.append(item)
                net.before.append(last)
                net.way.append((p, -1))
                last = [len(net.words) - 1]
                for t in taken:
                    t.append(last[0])
            else:
                last, inner = _arcs(net, item, last, p)
                taken = [t + i for t in taken for i in inner]
        joined += last
        paths += taken
    return joined, paths


def spelled(ways: list[Way]) -> list[list[str]]:
    """Every way's words, an alternation inside one spelled out into as many ways, in the order written."""
    if not isinstance(ways, Nested):
        return ways
    out = []
    for way in ways:
        said = [[]]
        for item in way:
            said = [s + [item] for s in said] if isinstance(item, str) else [s + i for s in said for i in spelled(item)]
        out += said
    return out


WayTimes = tuple[list, list]  # each side's pieces, each piece's ways, each way's words' (start, end) in seconds


def align(pieces: list[list[Way]], heard_pieces: list[list[Way]], lenient: Lenient = PLAIN,
          times: WayTimes | None = None) -> tuple[list[int], list[int], bytes, int]:
    """sclite's alignment of a hypothesis' network with a reference's (each piece its ways, each way its words, `@`
    alone for nothing, and the alternations inside it, a piece holding any such Nested; a hypothesis too may write
    alternations, as a GLM writes them into one: `{ SHE'S / SHE IS }`): the way taken through each side's pieces
    (an index into spelled(ways)), and the op codes over the words of the ways taken, a `@` on
    either side passed over as sclite passes over it (a `@` is never substituted for a word: passing over it and
    inserting the word costs less). Its cheapest way back is taken among both networks' ends and arcs in sclite's
    order, the reference's before the hypothesis'. `lenient`: sclite's -D and -F, where they are asked for
    (scoring/lenient.py). `times`: each word's (start, end), the pieces' shape: aligned by them, as sclite -T
    aligns a ctm reference's (_time_weights). Last, how many `@` the alignment took across a word: only by time,
    where a word starts at 0 s, as a `@` does (a tie sclite takes as a substitution, the `@` a reference word);
    here that word is inserted or deleted and the `@` passed over."""
    one_way = all(len(ways) == 1 for ways in (*pieces, *heard_pieces))
    if one_way and times is None:
        said = [w for (way,) in pieces for w in way]
        hyp = [w for (way,) in heard_pieces for w in way]
        if NOTHING not in said and NOTHING not in hyp and (len(said) + 1) * (len(hyp) + 1) <= MOST_CELLS:
            return [0] * len(pieces), [0] * len(heard_pieces), _line(said, hyp, lenient), 0
    net, hnet = _network(pieces), _network(heard_pieces)
    words, heard = net.words, hnet.words
    if len(words) * len(heard) > MOST_CELLS:
        raise ValueError(f"{len(words) - 1:,} words (of every way) against a hypothesis of {len(heard) - 1:,}: "
                         f"sclite's alignment would hold {len(words) * len(heard):,} cells, at most {MOST_CELLS:,}; "
                         "cut the utterance into shorter ones")
    said = [None if w is None else lenient.word(w) for w in words]
    written = [None if w is None else lenient.word(w) for w in heard]
    same = lenient.same
    if times is not None:
        weights = functools.partial(_time_weights, _network(times[0]).words, _network(times[1]).words)
    else:
        weights = _whole_weights if NOTHING not in words and NOTHING not in heard else _float_weights
    back, (a, b) = weights(net, hnet, said, written, lenient)
    taken, taken_heard, codes, nulls = [0] * len(pieces), [0] * len(heard_pieces), [], 0
    route, heard_route = {p: [] for p in net.paths}, {p: [] for p in hnet.paths}  # arcs taken, the last first
    while a > 0 or b > 0:
        was_a, was_b = back[a][b]
        if a > 0:
            p, k = net.way[a]
            if k >= 0:
                taken[p] = k
            elif was_a != a:
                route[p].append(a)
        if b > 0:
            p, k = hnet.way[b]
            if k >= 0:
                taken_heard[p] = k
            elif was_b != b:
                heard_route[p].append(b)
        if was_a == a:
            if heard[b] != NOTHING:  # sclite -D: a hypothesis' optional word over nothing is correct
                codes.append(OPTIONAL_INSERTION if written[b].optional else INSERTION)
        elif was_b == b:
            if words[a] != NOTHING:
                codes.append(OPTIONAL_DELETION if said[a].optional else DELETION)
        elif words[a] == NOTHING and heard[b] == NOTHING:
            pass
        elif words[a] == NOTHING or heard[b] == NOTHING:  # by time alone: a `@` (at 0 s) across a word at 0 s
            nulls += 1
            codes.append((OPTIONAL_INSERTION if written[b].optional else INSERTION) if words[a] == NOTHING
                         else OPTIONAL_DELETION if said[a].optional else DELETION)
        else:
            codes.append(HIT if same(said[a], written[b]) else SUBSTITUTION)
        a, b = was_a, was_b
    for side, chosen, arcs in ((net, taken, route), (hnet, taken_heard, heard_route)):
        for p, last_first in arcs.items():
            chosen[p] = side.paths[p].index(last_first[::-1])
    return taken, taken_heard, bytes(reversed(codes)), nulls


def _whole_weights(net: _Network, hnet: _Network, said: list, written: list, lenient: Lenient
                   ) -> tuple[np.ndarray, tuple[int, int]]:
    """_float_weights' steps where no `@` is on either side: every weight is a whole number, so the sums are
    exact in sclite's floats too, and integers take the same steps: each cell's step back, and the cell the way
    back starts from."""
    gap = {False: int(GAP), True: int(OPTIONAL_GAP)}  # no `@` here: lenient.cost's weights of a word over a gap
    dropped = np.array([0] + [gap[w.optional] for w in said[1:]], np.int64)
    added = np.array([0] + [gap[w.optional] for w in written[1:]], np.int64)
    return _steps(net, hnet, _substituted(said, written, lenient, np.int64), dropped, added)


def _float_weights(net: _Network, hnet: _Network, said: list, written: list, lenient: Lenient
                   ) -> tuple[np.ndarray, tuple[int, int]]:
    """sclite's cells in its single-precision floats, where a `@` weighs 0.001 (lenient.cost): each cell's step
    back, and the cell the way back starts from; the same steps as _whole_weights' on float32 weights, whose sums
    round as sclite's floats round."""
    cost = lenient.cost
    substituted = _substituted(said, written, lenient, np.float32)
    nothing = [a for a in range(1, len(said)) if said[a].value == NOTHING]
    heard_nothing = [b for b in range(1, len(written)) if written[b].value == NOTHING]
    for a, b in {*((a, b) for a in nothing for b in range(1, len(written))),
                 *((a, b) for b in heard_nothing for a in range(1, len(said)))}:  # a `@`'s: not a word's weights
        substituted[a, b] = cost(said[a], written[b])
    dropped = np.array([0] + [cost(w, None) for w in said[1:]], np.float32)
    added = np.array([0] + [cost(None, w) for w in written[1:]], np.float32)
    return _steps(net, hnet, substituted, dropped, added)


def _time_weights(said_times: list, heard_times: list, net: _Network, hnet: _Network, said: list, written: list,
                  lenient: Lenient) -> tuple[np.ndarray, tuple[int, int]]:
    """sclite -T's cells (sctk's wwd_time_WORD, in its single-precision floats): a word against another weighs the
    distance of their starts and of their ends, 0.001 more where they differ; a word over a gap, its duration; a
    `@` over a gap 0.001 (a `@` itself starts and ends at 0 s). `said_times`, `heard_times`: each arc's (start,
    end), in the networks' order."""
    starts, ends = (np.array([0.0] + [t[k] for t in said_times[1:]]) for k in (0, 1))
    heard_starts, heard_ends = (np.array([0.0] + [t[k] for t in heard_times[1:]]) for k in (0, 1))
    apart = np.abs(starts[:, None] - heard_starts[None, :]) + np.abs(ends[:, None] - heard_ends[None, :])
    differ = np.where(_substituted(said, written, lenient, np.float64) == EQUAL, 0.0, 0.001)
    substituted = (apart + differ).astype(np.float32)
    dropped, added = ([0.0] + [PASSING if w.value == NOTHING else e - s for w, (s, e) in zip(side[1:], timed[1:])]
                      for side, timed in ((said, said_times), (written, heard_times)))
    return _steps(net, hnet, substituted, np.array(dropped, np.float32), np.array(added, np.float32))


def _substituted(said: list, written: list, lenient: Lenient, dtype) -> np.ndarray:
    """The weight of each word of the reference's network against each of the hypothesis's, `@` aside."""
    ids: dict[str, int] = {}
    said_ids = np.array([-1] + [ids.setdefault(w.text, len(ids)) for w in said[1:]], np.int64)
    written_ids = np.array([-2] + [ids.setdefault(w.text, len(ids)) for w in written[1:]], np.int64)
    substituted = np.where(said_ids[:, None] == written_ids[None, :], EQUAL, UNEQUAL).astype(dtype)
    fragments = {(a, b) for a in range(1, len(said)) if said[a].fragment for b in range(1, len(written))}
    fragments |= {(a, b) for b in range(1, len(written)) if written[b].fragment for a in range(1, len(said))}
    for a, b in fragments:  # a fragment (sclite's -F) matches more than its own text
        substituted[a, b] = EQUAL if lenient.same(said[a], written[b]) else UNEQUAL
    return substituted


def _steps(net: _Network, hnet: _Network, substituted: np.ndarray, dropped: np.ndarray, added: np.ndarray
           ) -> tuple[np.ndarray, tuple[int, int]]:
    """_whole_steps over the two networks, compiled by numba once this process has aligned INTERPRETED_CELLS cells
    of networks (the same steps either way)."""
    total = np.zeros(substituted.shape, substituted.dtype)
    back = np.zeros((*substituted.shape, 2), np.int64)
    global _cells_aligned
    _cells_aligned += total.size
    steps = _compiled() if _cells_aligned > INTERPRETED_CELLS else _whole_steps
    end = steps(*_linked(net.before), *_linked(hnet.before), substituted, dropped, added,
                np.array(net.ends, np.int64), np.array(hnet.ends, np.int64), total, back)
    return back, (int(end[0]), int(end[1]))


def _linked(before: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Each arc's arcs before it, as two arrays: arc a's are `flat[at[a]:at[a + 1]]`."""
    at = np.zeros(len(before) + 1, np.int64)
    at[1:] = np.cumsum([len(b) for b in before])
    return at, np.array([x for b in before for x in b], np.int64)


def _whole_steps(before_at, before, into_at, into, substituted, dropped, added, ends, heard_ends, total, back):
    """sclite's cells over two networks, each arc's arcs before it linked (_linked): at each cell the first of the
    cheapest arcs before it, in the order sclite links them, and a substitution, then a deletion, then an insertion
    on a tie, as sclite's strict < takes them. Fills `total` and `back`, and gives the cell the way back starts
    from. Written for numba too: loops over arrays alone."""
    n_said, n_heard = total.shape
    for b in range(1, n_heard):
        p = into[into_at[b]]
        for k in range(into_at[b] + 1, into_at[b + 1]):
            if total[0, into[k]] < total[0, p]:
                p = into[k]
        total[0, b] = total[0, p] + added[b]
        back[0, b, 1] = p
    for a in range(1, n_said):
        low, high = before_at[a], before_at[a + 1]
        p = before[low]
        for k in range(low + 1, high):
            if total[before[k], 0] < total[p, 0]:
                p = before[k]
        total[a, 0] = total[p, 0] + dropped[a]
        back[a, 0, 0] = p
        for b in range(1, n_heard):
            first, last = into_at[b], into_at[b + 1]
            i = into[first]
            for k in range(first + 1, last):
                if total[a, into[k]] < total[a, i]:
                    i = into[k]
            inserted = total[a, i] + added[b]
            d = before[low]
            for k in range(low + 1, high):
                if total[before[k], b] < total[d, b]:
                    d = before[k]
            deleted = total[d, b] + dropped[a]
            sx, sy = before[low], into[first]
            for kx in range(low, high):
                for ky in range(first, last):
                    if total[before[kx], into[ky]] < total[sx, sy]:
                        sx, sy = before[kx], into[ky]
            through = total[sx, sy] + substituted[a, b]
            if through <= deleted and through <= inserted:
                total[a, b], back[a, b, 0], back[a, b, 1] = through, sx, sy
            elif deleted < inserted:
                total[a, b], back[a, b, 0], back[a, b, 1] = deleted, d, b
            else:
                total[a, b], back[a, b, 0], back[a, b, 1] = inserted, a, i
    ex, ey = ends[0], heard_ends[0]
    for x in ends:
        for y in heard_ends:
            if total[x, y] < total[ex, ey]:
                ex, ey = x, y
    return ex, ey


# as align.py's: a run's few utterances with alternations are aligned uncompiled, the same steps
INTERPRETED_CELLS = 100_000
_cells_aligned = 0


@functools.cache
def _compiled():
    """_whole_steps compiled (and cached on disk) at the first network past INTERPRETED_CELLS."""
    import numba

    return numba.njit(cache=True, nogil=True)(_whole_steps)


def _line(ref: list[str], hyp: list[str], lenient: Lenient) -> bytes:
    """align's steps where the reference is said one way and neither side writes `@`: the network is a line, every
    weight a whole number (sums exact, in sclite's floats too), and the same steps take Python's integers and lists
    in place of numpy's scalars: `score --optional-words --fragments` on 5,000 pairs with such words took 4.2 s
    where it took 12.7 s through the network."""
    said, written = [lenient.word(w) for w in ref], [lenient.word(w) for w in hyp]
    same = lenient.same
    dropped = [int(lenient.cost(w, None)) for w in said]
    added = [int(lenient.cost(None, w)) for w in written]
    miss = int(UNEQUAL)
    prev = [0]
    for cost in added:
        prev.append(prev[-1] + cost)
    back = [bytes([LEFT]) * (len(hyp) + 1)]
    for r, drop in zip(said, dropped):
        cur, steps = [prev[0] + drop], bytearray([UP])
        for b, (h, add) in enumerate(zip(written, added)):
            equal = r.text == h.text if not (r.fragment or h.fragment) else same(r, h)
            substituted, deleted, inserted = prev[b] + (0 if equal else miss), prev[b + 1] + drop, cur[b] + add
            if substituted <= deleted and substituted <= inserted:
                cur.append(substituted)
                steps.append(DIAG)
            elif deleted < inserted:
                cur.append(deleted)
                steps.append(UP)
            else:
                cur.append(inserted)
                steps.append(LEFT)
        back.append(steps)
        prev = cur
    a, b, codes = len(said), len(written), []
    while a > 0 or b > 0:
        step = back[a][b]
        if step == LEFT:
            b -= 1
            codes.append(OPTIONAL_INSERTION if written[b].optional else INSERTION)
        elif step == UP:
            a -= 1
            codes.append(OPTIONAL_DELETION if said[a].optional else DELETION)
        else:
            a, b = a - 1, b - 1
            codes.append(HIT if same(said[a], written[b]) else SUBSTITUTION)
    return bytes(reversed(codes))


def resolve(reference: str, hypothesis: str, normalizer: Normalizer, lenient: Lenient = PLAIN,
            ways: bool = True, times: tuple[list, list] | None = None) -> Resolved:
    """The way `reference` was said, as sclite finds it from `hypothesis` after `normalizer`, and its alignment
    (with sclite's -D and -F where `lenient` asks for them: a reference without alternations is said one way);
    where the hypothesis writes alternations too, the way it is read. `ways`: whether braces write alternations;
    without, both texts are read as written, braces and all. `times`: the (start, end) of each word of either text
    as written (no `@`), to align by them, as sclite -T does. ValueError names the side whose braces are wrong, or
    whose words the normalizer changes in number where they carry times."""
    tree = _pieces(reference, ways, "the reference")
    heard_tree = _pieces(hypothesis, ways and held(hypothesis), "the hypothesis")
    said = [_ways(piece, normalizer.references) for piece in tree]
    heard = [_ways(piece, normalizer.hypotheses) for piece in heard_tree]
    orders, heard_orders = (_sclite_order(t, normalizer.characters) for t in (tree, heard_tree))
    timed = None if times is None else (_ordered(_timed(tree, said, times[0], "the reference"), orders),
                                        _ordered(_timed(heard_tree, heard, times[1], "the hypothesis"), heard_orders))
    taken, taken_heard, codes, nulls = align(_ordered(said, orders), _ordered(heard, heard_orders), lenient, timed)
    taken, taken_heard = _unordered(taken, orders), _unordered(taken_heard, heard_orders)
    pieces, heard_pieces = _spelled_pieces(tree), _spelled_pieces(heard_tree)
    text = _taken_text(pieces, taken)
    said, heard = ([spelled(ways) if isinstance(ways, Nested) else ways for ways in side] for side in (said, heard))
    words = [w for piece, k in zip(said, taken) for w in piece[k] if w != NOTHING]
    read = _taken_text(heard_pieces, taken_heard) if len(heard_pieces) > 1 else None
    hyp = [w for piece, k in zip(heard, taken_heard) for w in piece[k] if len(piece) == 1 or w != NOTHING]
    consumed = (sum(c not in HYP_ONLY for c in codes), sum(c not in REF_ONLY for c in codes))
    if (consumed != (len(words), len(hyp)) or normalizer.references([text])[0].split() != words
            or (read is not None and normalizer.hypotheses([read])[0].split() != hyp)):
        return Resolved(text, None, read, tuple(taken_heard), nulls)
    return Resolved(text, codes, read, tuple(taken_heard), nulls)


def _timed(tree: list[str | _Alternation], said: list[list[Way]], times: list[tuple[float, float]], side: str
           ) -> list[list[list[tuple[float, float]]]]:
    """The (start, end) of each word of the pieces' ways after the normalizer (`said`), from those of the words
    as written, in order (`times`); a `@` starts and ends at 0 s, as sclite's null word does."""
    given, out = iter(times), []
    for piece, ways in zip(tree, said):
        written = [piece] if isinstance(piece, str) else [way for (way,) in piece.written] if not piece.nested \
            else None
        if written is None:
            raise ValueError(f"{side}: an alternation inside another, whose words carry no times here")
        timed = []
        for text, way in zip(written, ways):
            words = [w for w in text.split() if w != NOTHING]
            if len(words) != len([w for w in way if w != NOTHING]):
                raise ValueError(f"{side}: the normalizer makes {text.strip()!r} {' '.join(way)!r}, other words "
                                 "than those the times are of; align by time with --normalize sclite or none")
            timed.append([(0.0, 0.0) if w == NOTHING else next(given, None) for w in way])
        out.append(timed)
    if next(given, None) is not None or any(t is None for ways in out for way in ways for t in way):
        raise ValueError(f"{side}: {len(times)} words with times, and another number written")
    return out


def _sclite_order(tree: list[str | _Alternation], characters: Characters | None) -> list[list[int] | None]:
    """The order sclite takes each piece's ways in, where it cuts words into characters (`characters`) and so the
    order differs from the written one (else None): a way whose first word it takes apart goes after those whose
    first word it keeps, as its expand_words_to_chars puts the pieces of a word after the arcs beside it (an
    alternation inside another keeps its order)."""
    orders = []
    for piece in tree:
        if characters is None or isinstance(piece, str) or piece.nested:
            orders.append(None)
            continue
        firsts = [way.split()[:1] for (way,) in piece.written]
        apart = [bool(first) and characters.apart(first[0]) for first in firsts]
        order = sorted(range(len(apart)), key=lambda k: apart[k])
        orders.append(order if apart != sorted(apart) else None)
    return orders


def _ordered(pieces: list, orders: list[list[int] | None]) -> list:
    return [ways if order is None else [ways[k] for k in order] for ways, order in zip(pieces, orders)]


def _unordered(taken: list[int], orders: list[list[int] | None]) -> list[int]:
    return [k if order is None else order[k] for k, order in zip(taken, orders)]


def read_positions(text: str, taken: list[int]) -> tuple[int, ...]:
    """The positions in text.split() of the words of the way `taken` (a way of each of parse(text)'s pieces) reads
    it: those _taken_text writes, where every brace and slash stands apart from the words and no alternation is
    inside another (as scoring/stm.py and scoring/glm.py write a ctm's); () where they do not."""
    found = list(_ALTERNATION.finditer(text))
    if 2 * len(found) + 1 != len(taken):  # one inside another
        return ()
    spans, at, ways = [], 0, iter(taken)
    for m in found:
        next(ways)  # the text before it, read its one way
        spans.append((at, m.start(), False))
        chosen, start = next(ways), m.start(1)
        for k, way in enumerate(m.group(1).split("/")):
            if k == chosen:
                spans.append((start, start + len(way), True))
            start += len(way) + 1
        at = m.end()
    spans.append((at, len(text), False))
    out = tuple(i for i, w in enumerate(re.finditer(r"\S+", text))
                if any(a <= w.start() and w.end() <= b and not (within and w.group() == NOTHING)
                       for a, b, within in spans))
    words = text.split()
    return out if [words[i] for i in out] == _taken_text(parse(text), taken).split() else ()


def _pieces(text: str, ways: bool, side: str) -> list[str | _Alternation]:
    try:
        return _tree(text) if ways else [text]
    except ValueError as e:
        raise ValueError(f"{side}: {e}") from None


def _spelled_pieces(tree: list[str | _Alternation]) -> list[tuple[str, ...]]:
    return [(piece,) if isinstance(piece, str) else piece.ways for piece in tree]


def _ways(piece: str | _Alternation, normalized) -> list[Way]:
    """A piece's ways after the normalizer, each its words and the alternations inside it: a way of an alternation
    that says nothing is `@`."""
    if isinstance(piece, str):
        return [normalized([piece])[0].split()]
    if not piece.nested:
        return [normalized([way])[0].split() or [NOTHING] for (way,) in piece.written]
    return Nested(_way(written, normalized) or [NOTHING] for written in piece.written)


def _way(written: tuple[str | _Alternation, ...], normalized) -> Way:
    out = []
    for item in written:
        if isinstance(item, str):
            out += normalized([item])[0].split()
        else:
            out.append(_ways(item, normalized))
    return out


def _taken_text(pieces: list[tuple[str, ...]], taken: list[int]) -> str:
    return " ".join(" ".join(piece[k].split()) for piece, k in zip(pieces, taken) if piece[k].strip())
