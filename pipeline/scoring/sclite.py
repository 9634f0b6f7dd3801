"""NIST sclite's formats: `trn` transcripts and pralign-style alignment text."""
from __future__ import annotations

from pipeline.scoring.align import OPS, edits, tally


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


def pralign(uid: str, ref: list[str], hyp: list[str], codes: list[int]) -> str:
    """sclite pralign style: REF/HYP with errors upper-cased, *** for gaps, and an S/D/I line, from an alignment's
    words and op codes (align.align_codes)."""
    ref_row, hyp_row, eval_row = [], [], []
    for i, run, _, code, r, h in edits(ref, hyp, codes):
        if run:  # most words: hits, as they are, nothing below them
            words = " ".join(ref[i:i + run])
            ref_row.append(words)
            hyp_row.append(words)
            eval_row.append(" " * len(words))
        if code is None:
            break
        r_txt = "*" * max(len(h or ""), 3) if r is None else r.upper()
        h_txt = "*" * max(len(r or ""), 3) if h is None else h.upper()
        width = max(len(r_txt), len(h_txt))
        ref_row.append(r_txt.ljust(width))
        hyp_row.append(h_txt.ljust(width))
        eval_row.append(OPS[code].value.ljust(width))
    hits, subs, dels, ins = tally(codes)
    wer = f"{100 * ((subs + dels + ins) / len(ref)):.1f}%" if ref else "n/a"
    return (f"id: ({uid})\n"
            f"Scores: (#C #S #D #I) {hits} {subs} {dels} {ins}  WER {wer}\n"
            f"REF:  {' '.join(ref_row)}\nHYP:  {' '.join(hyp_row)}\nEval: {' '.join(eval_row).rstrip()}\n")
