"""NIST sclite's formats: `trn` transcripts and pralign-style alignment text."""
from __future__ import annotations

from pipeline.scoring.align import Op
from pipeline.scoring.align import Alignment


def write_trn(lines: list[tuple[str, str]]) -> str:
    """`text (id)` lines from (id, text) pairs; an id is written as the CSVs hold it (records.utterance_id)."""
    return "".join(f"{text} ({uid})\n" for uid, text in lines)


def read_trn(text: str) -> list[tuple[str, str]] | None:
    """(id, text) pairs of the `text (id)` lines, or None when the text is not a trn file (a line without an id,
    or no line at all)."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        words, paren, uid = line[:-1].rpartition("(")  # `text (id)`: the last parenthesis, no paren inside
        if not line.endswith(")") or not paren or ")" in uid or not uid:
            return None
        out.append((uid.strip(), words.strip()))
    return out or None


def pralign(uid: str, a: Alignment) -> str:
    """sclite pralign style: REF/HYP with errors upper-cased, *** for gaps, and an S/D/I line."""
    ref, hyp, evals = [], [], []
    for op, r, h in a.ops:
        if op == Op.HIT:  # most words: as they are, nothing below them
            ref.append(r)
            hyp.append(h)
            evals.append(" " * len(r))
            continue
        r_txt = "*" * max(len(h or ""), 3) if r is None else r.upper()
        h_txt = "*" * max(len(r or ""), 3) if h is None else h.upper()
        width = max(len(r_txt), len(h_txt))
        ref.append(r_txt.ljust(width))
        hyp.append(h_txt.ljust(width))
        evals.append(op.value.ljust(width))
    wer = "n/a" if a.wer is None else f"{100 * a.wer:.1f}%"
    return (f"id: ({uid})\n"
            f"Scores: (#C #S #D #I) {a.hits} {a.substitutions} {a.deletions} {a.insertions}  WER {wer}\n"
            f"REF:  {' '.join(ref)}\nHYP:  {' '.join(hyp)}\nEval: {' '.join(evals).rstrip()}\n")
