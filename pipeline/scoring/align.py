"""Word alignment and error counts for one utterance.

The alignment uses NIST sclite's weights (substitution 4, insertion 3, deletion 3) so that, among the
alignments with the fewest edits, the one that keeps matching words as hits is chosen, as sclite does:
"um I left this phone" / "my sister her phone" aligns "phone" with "phone". jiwer's `process_words`
(uniform weights) gives the same edit distance on the examples in the tests, which check the two agree."""
from __future__ import annotations

from dataclasses import dataclass, field

SUB, INS, DEL = 4, 3, 3
Ops = list[tuple[str, str | None, str | None]]  # (H/S/D/I, reference word, hypothesis word)


@dataclass
class Alignment:
    """One utterance's alignment: ops is a list of (op, ref word or None, hyp word or None), op in H/S/D/I."""
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


def align(ref: list[str], hyp: list[str]) -> Alignment:
    n, m = len(ref), len(hyp)
    cost = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        cost[i][0] = i * DEL
    for j in range(1, m + 1):
        cost[0][j] = j * INS
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            diag = cost[i - 1][j - 1] + (0 if ref[i - 1] == hyp[j - 1] else SUB)
            cost[i][j] = min(diag, cost[i - 1][j] + DEL, cost[i][j - 1] + INS)
    ops: list[tuple[str, str | None, str | None]] = []
    i, j = n, m
    while i or j:
        if i and j and cost[i][j] == cost[i - 1][j - 1] + (0 if ref[i - 1] == hyp[j - 1] else SUB):
            ops.append(("H" if ref[i - 1] == hyp[j - 1] else "S", ref[i - 1], hyp[j - 1]))
            i, j = i - 1, j - 1
        elif i and cost[i][j] == cost[i - 1][j] + DEL:
            ops.append(("D", ref[i - 1], None))
            i -= 1
        else:
            ops.append(("I", None, hyp[j - 1]))
            j -= 1
    ops.reverse()
    out = Alignment(ref_words=n, ops=ops)
    for op, _, _ in ops:
        if op == "H":
            out.hits += 1
        elif op == "S":
            out.substitutions += 1
        elif op == "D":
            out.deletions += 1
        else:
            out.insertions += 1
    return out


def align_text(ref: str, hyp: str) -> Alignment:
    """Align two already-normalized texts, splitting on whitespace."""
    return align(ref.split(), hyp.split())


def from_events(ref: str, hyp: str, events: list) -> Ops:
    """An alignment's ops rebuilt from the error events scoring saved (ErrorEvent: type, words and position in
    the ops) and the normalized texts: every position without an event is a hit."""
    ref_words, hyp_words = iter(ref.split()), iter(hyp.split())
    at = {e.position: e for e in events}
    ops: Ops = []
    total = len(ref.split()) + sum(1 for e in events if e.type == "insertion")
    for pos in range(total):
        e = at.get(pos)
        if e is None:
            ops.append(("H", next(ref_words), next(hyp_words)))
        elif e.type == "substitution":
            ops.append(("S", next(ref_words), next(hyp_words)))
        elif e.type == "deletion":
            ops.append(("D", next(ref_words), None))
        else:
            ops.append(("I", None, next(hyp_words)))
    return ops
