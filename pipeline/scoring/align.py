"""Word alignment and error counts for one utterance.

The alignment uses NIST sclite's weights (substitution 4, insertion 3, deletion 3) so that, among the
alignments with the fewest edits, the one that keeps matching words as hits is chosen, as sclite does:
"um I left this phone" / "my sister her phone" aligns "phone" with "phone". jiwer's `process_words`
(uniform weights) gives the same edit distance on the examples in the tests, which check the two agree.

Among equally cheap alignments sclite's choice is kept. Filling each cell, sclite's net_dp.c takes a hit or
substitution on any tie, and a deletion only where it is cheaper than an insertion; back from the end along those
choices. Alignments of the same cost can differ in their counts (four substitutions weigh as much as two deletions
and two insertions), so the tie matters to the WER: taking the deletion on a tie instead, this aligner differed from
sclite in its counts on 12 of 20,000 random pairs over five words, and in its alignment on 370. kaldialign (Kaldi's
aligner, `sclite_mode=True`) breaks ties otherwise too: on those pairs its S/D/I counts differ from sclite's on 441.
So the dynamic programme here is our own, compiled with numba past a run's size: two rows of costs and one byte of
back-pointer per cell, so a 6,000-word recording against its transcript takes 36 MB and a fraction of a second,
and 20,000 words 400 MB."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable

import numpy as np

from pipeline.scoring.normalize import JIWER_COUNTED, KALDI_COUNTED


class Op(str, Enum):
    """An edit operation of an alignment, spelled once: its letter (sclite's pralign, the ops of an Alignment) and
    its word (`errors.csv`'s type: substitution, deletion, insertion)."""
    HIT = "H"
    SUBSTITUTION = "S"
    DELETION = "D"
    INSERTION = "I"

    @property
    def word(self) -> str:
        return self.name.lower()


ERRORS = tuple(op.word for op in Op if op is not Op.HIT)
Ops = list[tuple[Op, str | None, str | None]]  # (edit operation, reference word, hypothesis word)

SUB, INS, DEL = 4, 3, 3
DIAG, UP, LEFT = 0, 1, 2  # back-pointers: hit or substitution, deletion, insertion


@dataclass
class Alignment:
    """One utterance's alignment: ops is a list of (Op, ref word or None, hyp word or None)."""
    ref_words: int
    hits: int = 0
    substitutions: int = 0
    deletions: int = 0
    insertions: int = 0
    ops: Ops = field(default_factory=list)

    @property
    def errors(self) -> int:
        return self.substitutions + self.deletions + self.insertions

    @property
    def wer(self) -> float | None:
        """(S + D + I) / N, or None when the reference is empty (no rate can be defined)."""
        return self.errors / self.ref_words if self.ref_words else None


HIT, SUBSTITUTION, DELETION, INSERTION = range(4)  # op codes of the compiled aligner
# sclite -D's (scoring/lenient.py): a word in parentheses on one side and nothing across, which sclite scores correct
OPTIONAL_DELETION, OPTIONAL_INSERTION = 4, 5
OPS = (Op.HIT, Op.SUBSTITUTION, Op.DELETION, Op.INSERTION, Op.HIT, Op.HIT)  # by code
WORDS = (*(op.word for op in OPS[:4]), "optional_deletion", "optional_insertion")  # by code: errors.csv's types
OPTIONAL = WORDS[OPTIONAL_DELETION:]  # errors.csv's events that are no errors, kept so that the alignment reads back
CODES = {word: code for code, word in enumerate(WORDS)}


def _codes(ref: np.ndarray, r_off: np.ndarray, hyp: np.ndarray, h_off: np.ndarray,
           out: np.ndarray, out_off: np.ndarray, out_len: np.ndarray) -> None:
    """Each pair's op codes, in order, into out[out_off[k]:out_off[k] + out_len[k]]. Forward: the cost table's
    last two rows and a back-pointer per cell, the diagonal on any tie, and up (a deletion) only where it is cheaper
    than left (an insertion), as in sclite; back from the end along the pointers, as sclite's backtrace goes."""
    for k in range(len(r_off) - 1):
        r, h = ref[r_off[k]:r_off[k + 1]], hyp[h_off[k]:h_off[k + 1]]
        n, m = len(r), len(h)
        back = np.empty((n + 1, m + 1), np.uint8)
        prev = np.empty(m + 1, np.int64)
        cur = np.empty(m + 1, np.int64)
        for j in range(m + 1):
            prev[j] = j * INS
            back[0, j] = LEFT
        for i in range(1, n + 1):
            cur[0] = i * DEL
            back[i, 0] = UP
            for j in range(1, m + 1):
                diag = prev[j - 1] + (0 if r[i - 1] == h[j - 1] else SUB)
                up = prev[j] + DEL
                left = cur[j - 1] + INS
                if diag <= up and diag <= left:
                    cur[j], back[i, j] = diag, DIAG
                elif up < left:
                    cur[j], back[i, j] = up, UP
                else:
                    cur[j], back[i, j] = left, LEFT
            prev, cur = cur, prev
        i, j, length, base = n, m, 0, out_off[k]
        while i > 0 or j > 0:
            step = back[i, j]
            if step == DIAG:
                out[base + length] = HIT if r[i - 1] == h[j - 1] else SUBSTITUTION
                i, j = i - 1, j - 1
            elif step == UP:
                out[base + length] = DELETION
                i -= 1
            else:
                out[base + length] = INSERTION
                j -= 1
            length += 1
        out[base:base + length] = out[base:base + length][::-1].copy()
        out_len[k] = length


# A run's few dozen utterances are aligned by the same function uncompiled, the same steps and so the same codes:
# at about 2 µs a cell, 100,000 cells take less than loading numba and its cached kernel (0.6 s)
INTERPRETED_CELLS = 100_000
_cells_aligned = 0


@functools.cache
def _compiled():
    """_codes compiled (and cached on disk) at the first alignment: importing numba costs a third of a second,
    which a fully cached rerun, which aligns nothing, would pay for nothing."""
    import numba

    return numba.njit(cache=True, nogil=True)(_codes)


def preload() -> None:
    """Align compiled from now on, with the kernel loaded: in this process and in those forked from it, which so
    neither load it again nor align their first cells uncompiled (the codes are the same either way)."""
    global _cells_aligned
    _cells_aligned = max(_cells_aligned, INTERPRETED_CELLS)
    align_codes([["a"]], [["b"]])


def align_codes(refs: list[list[str]], hyps: list[list[str]]) -> list[bytes]:
    """The op codes of every (reference, hypothesis) pair, a byte each. Each pair is aligned alone; they only share one
    compiled call (words become integers, equal where the words are equal), so a corpus costs one call."""
    ref_words = [w for t in refs for w in t]
    hyp_words = [w for t in hyps for w in t]
    ids = {w: i for i, w in enumerate(dict.fromkeys(ref_words + hyp_words))}

    def flat(words: list[str], texts: list[list[str]]) -> tuple[np.ndarray, np.ndarray]:
        return np.array(list(map(ids.__getitem__, words)), np.int64), np.cumsum([0, *map(len, texts)], dtype=np.int64)

    (r, r_off), (h, h_off) = flat(ref_words, refs), flat(hyp_words, hyps)
    out_off = r_off + h_off
    out = np.empty(out_off[-1], np.int8)
    out_len = np.empty(len(refs), np.int64)
    global _cells_aligned
    # past INTERPRETED_CELLS in this process, compiled: a long input comes a chunk at a time, each of them small
    _cells_aligned += sum((len(a) + 1) * (len(b) + 1) for a, b in zip(refs, hyps))
    codes = _compiled() if _cells_aligned > INTERPRETED_CELLS else _codes
    codes(r, r_off, h, h_off, out, out_off, out_len)
    codes = out.tobytes()
    return [codes[o:o + n] for o, n in zip(out_off.tolist(), out_len.tolist())]


def jiwer_codes(refs: list[list[str]], hyps: list[list[str]]) -> list[bytes]:
    """The op codes jiwer's `process_words` finds (uniform weights, and rapidfuzz's choice among the equally short
    alignments), for a recipe whose published numbers jiwer counted: where sclite's weights prefer a deletion and an
    insertion to a substitution, the two can differ in S, D and I, and, rarely, in the number of edits.

    jiwer gives rapidfuzz each word as one character of a string; so does this, and where every word is already one
    character (a Chinese recipe's units) the words joined are that string. rapidfuzz's alignment depends only on
    which units are equal, so either way it is jiwer's."""
    from rapidfuzz.distance import Levenshtein

    opcodes, out = Levenshtein.opcodes, []
    code = {"equal": bytes([HIT]), "replace": bytes([SUBSTITUTION]), "delete": bytes([DELETION]),
            "insert": bytes([INSERTION])}
    for ref, hyp in zip(refs, hyps):
        a, b = "".join(ref), "".join(hyp)
        if len(a) != len(ref) or len(b) != len(hyp):
            ids = {w: chr(i) for i, w in enumerate(dict.fromkeys(ref + hyp))}
            a, b = "".join(map(ids.__getitem__, ref)), "".join(map(ids.__getitem__, hyp))
        out.append(b"".join([code[tag] * (j2 - j1 if tag == "insert" else i2 - i1)
                             for tag, i1, i2, j1, j2 in opcodes(a, b)]))
    return out


def kaldi_codes(refs: list[list[str]], hyps: list[list[str]]) -> list[bytes]:
    """The op codes Kaldi's compute-wer counts (its Levenshtein distance, uniform weights, and its choice among the
    equally short alignments), through kaldialign, which wraps Kaldi's own functions and is what icefall scores
    with: where sclite's weights prefer a deletion and an insertion to a substitution, the two can differ in S, D
    and I, and, rarely, in the number of edits. Kaldi's alignment depends only on which words are equal: each pair's
    words are given as integers, -1 the gap."""
    import kaldialign

    out = []
    for ref, hyp in zip(refs, hyps):
        ids = {w: i for i, w in enumerate(dict.fromkeys(ref + hyp))}
        pairs = kaldialign.align([ids[w] for w in ref], [ids[w] for w in hyp], -1)
        out.append(bytes(INSERTION if r == -1 else DELETION if h == -1 else HIT if r == h else SUBSTITUTION
                         for r, h in pairs))
    return out


def aligner_of(normalizer: str) -> Callable[[list[list[str]], list[list[str]]], list[bytes]]:
    """How a normalizer's texts are aligned: as the numbers it stands for were counted (a recipe's that jiwer
    counted, jiwer's; `kaldi`'s, Kaldi's compute-wer's), and otherwise with sclite's weights."""
    if normalizer in JIWER_COUNTED:
        return jiwer_codes
    return kaldi_codes if normalizer in KALDI_COUNTED else align_codes


def tally(codes: bytes) -> list[int]:
    """(hits, substitutions, deletions, insertions) of an alignment's op codes; sclite -D's optional words with
    nothing across are hits, as sclite counts them."""
    hits = codes.count(HIT)
    if len(codes) != hits:
        hits += codes.count(OPTIONAL_DELETION) + codes.count(OPTIONAL_INSERTION)
    return [hits, *(codes.count(c) for c in (SUBSTITUTION, DELETION, INSERTION))]


def ref_words(ref: list[str], codes: bytes) -> int:
    """sclite's #Wrd of an alignment: the reference's words, and a hypothesis' optional word that nothing is across
    (sclite -D scores it correct, over an empty reference word)."""
    return len(ref) + codes.count(OPTIONAL_INSERTION)


_EDIT = re.compile(b"[^%c]" % HIT)  # an op code other than a hit: found by re, not a step per code
HYP_ONLY, REF_ONLY = (INSERTION, OPTIONAL_INSERTION), (DELETION, OPTIONAL_DELETION)  # the codes of a word across a gap


def edits(ref: list[str], hyp: list[str], codes: bytes):
    """An alignment's edits in order, without a step per hit (most words are hits): for each edit, the run of hits
    before it as (i, j, k), that is ref[i:i + k] against hyp[j:j + k] (the same words unless sclite -F matched a
    fragment), then the edit's position in the ops, its code and its words (None for a gap); a last entry with code
    None closes the run at the end. sclite -D's optional words with nothing across come as edits, correct ones."""
    i = j = prev = 0
    for found in _EDIT.finditer(codes):
        pos = found.start()
        run = pos - prev
        start, hyp_start, i, j = i, j, i + run, j + run
        c = codes[pos]
        r = None if c in HYP_ONLY else ref[i]
        h = None if c in REF_ONLY else hyp[j]
        i += r is not None
        j += h is not None
        yield start, hyp_start, run, pos, c, r, h
        prev = pos + 1
    yield i, j, len(codes) - prev, len(codes), None, None, None


def from_codes(ref: list[str], hyp: list[str], codes: bytes) -> Alignment:
    ops: Ops = []
    i = j = 0
    for c in codes:
        r = None if c in HYP_ONLY else ref[i]
        h = None if c in REF_ONLY else hyp[j]
        ops.append((OPS[c], r, h))
        i += r is not None
        j += h is not None
    return Alignment(ref_words(ref, codes), *tally(codes), ops=ops)


def align(ref: list[str], hyp: list[str]) -> Alignment:
    return from_codes(ref, hyp, align_codes([ref], [hyp])[0])


def align_text(ref: str, hyp: str) -> Alignment:
    """Align two already-normalized texts, splitting on whitespace."""
    return align(ref.split(), hyp.split())


def by_utterance(events: list) -> dict[str, list]:
    """Error events grouped by the utterance they belong to (ErrorEvent.id), in order."""
    out: dict[str, list] = {}
    for e in events:
        out.setdefault(e.id, []).append(e)
    return out


def from_events(ref: str, hyp: str, events: list) -> Alignment:
    """An utterance's alignment as scoring found it, from the error events it saved (ErrorEvent: type, words and
    position in the ops) and the normalized texts: every position without an event is a hit."""
    words = ref.split()
    return from_codes(words, hyp.split(), event_codes(len(words), events))


def event_codes(ref_words: int, events: list) -> bytes:
    """The op codes of an alignment of `ref_words` reference words, from the error events scoring saved of it."""
    at = {e.position: CODES[e.type] for e in events}
    out = bytearray(ref_words + sum(1 for c in at.values() if c in HYP_ONLY))  # zeros: HIT
    for pos, code in at.items():
        if 0 <= pos < len(out):
            out[pos] = code
    return bytes(out)
