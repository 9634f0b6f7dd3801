"""NIST sclite's formats: `trn` transcripts and pralign-style alignment text."""
from __future__ import annotations

from pipeline.scoring.align import OPS, OPTIONAL_DELETION, OPTIONAL_INSERTION, edits, tally

LETTERS = tuple(op.value for op in OPS)  # by code
CORRECT_OVER_GAP = (OPTIONAL_DELETION, OPTIONAL_INSERTION)  # sclite -D's
ESCAPED_SEMICOLON = "\\;"


def write_trn(lines: list[tuple[str, str]]) -> str:
    """`text (id)` lines from (id, text) pairs; an id is written as the CSVs hold it (records.utterance_id)."""
    return "".join(trn_line(uid, text) for uid, text in lines)


def trn_line(uid: str, text: str) -> str:
    """A `;` escaped: sclite reads what follows an unescaped one as the word's tags (normalize.sclite_words)."""
    return f"{text.replace(';', ESCAPED_SEMICOLON)} ({uid})\n"


COMMENTS = (";;", "**")  # what opens a line sclite reads past: a comment, a comment that carries information


def read_trn(text: str) -> list[tuple[str, str]] | None:
    """(id, text) pairs of the `text (id)` lines, or None when the text is not a trn file (a line without an id,
    or no line at all); blank and comment lines are read past, as sclite reads past them."""
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith(COMMENTS):
            continue
        entry = trn_entry(line)
        if entry is None:
            return None
        out.append(entry)
    return out or None


def trn_entry(line: str) -> tuple[str, str] | None:
    """(id, text) of a non-blank `text (id)` line; None when it has no id."""
    line = line.strip()
    words, paren, uid = line[:-1].rpartition("(")  # `text (id)`: the last parenthesis, no paren inside
    if not line.endswith(")") or not paren or ")" in uid or not uid:
        return None
    return uid.strip(), words.strip()


def pralign(uid: str, ref: list[str], hyp: list[str], codes: bytes, steps: list | None = None,
            counts: tuple[int, int, int, int] | None = None) -> str:
    """sclite pralign style: REF/HYP with errors upper-cased, `*`s for gaps, and an S/D/I line, from an alignment's
    words and op codes (align.align_codes); `steps`: align.edits of them, and `counts`: align.tally of them, where
    the caller has them already. As sclite writes them, a fragment that matched (-F) is in lower case above its word,
    and an optional word with nothing across (-D) above blanks."""
    ref_row, hyp_row, eval_row = [], [], []
    for i, j, run, _, code, r, h in edits(ref, hyp, codes) if steps is None else steps:
        if run:  # most words: hits, as they are, nothing below them
            said, heard = ref[i:i + run], hyp[j:j + run]
            if said != heard:  # a fragment matched: each column as wide as its wider word
                said, heard = zip(*[(a.ljust(len(b)), b.ljust(len(a))) for a, b in zip(said, heard)])
            words = " ".join(said)
            ref_row.append(words)
            hyp_row.append(" ".join(heard))
            eval_row.append(" " * len(words))
        if code is None:
            break
        if code in CORRECT_OVER_GAP:  # in its own case, across from blanks
            r, h, letter = r or " " * len(h), h or " " * len(r), " "
        else:
            letter = LETTERS[code]
            if r is None:  # a gap as wide as the word across from it, as sclite writes it
                r, h = "*" * len(h), h.upper()
            elif h is None:
                r, h = r.upper(), "*" * len(r)
            else:
                r, h = r.upper(), h.upper()
        width = max(len(r), len(h))
        ref_row.append(r.ljust(width))
        hyp_row.append(h.ljust(width))
        eval_row.append(letter.ljust(width))
    hits, subs, dels, ins = counts or tally(codes)
    words = hits + subs + dels  # sclite's #Wrd: with -D, a hypothesis' optional word with nothing across counts
    wer = f"{100 * ((subs + dels + ins) / words):.1f}%" if words else "n/a"
    return (f"id: ({uid})\n"
            f"Scores: (#C #S #D #I) {hits} {subs} {dels} {ins}  WER {wer}\n"
            f"REF:  {' '.join(ref_row)}\nHYP:  {' '.join(hyp_row)}\nEval: {' '.join(eval_row).rstrip()}\n")
