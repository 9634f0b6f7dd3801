"""The user's input files, read and checked before any work starts. Every problem is an InputError that names
the file (and line, where there is one), what is wrong and the fix; the CLI turns it into exit 2."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import numpy as np

from pipeline.errors import InputError

GPT2_VOCAB = 50257


def _text_file(path: str | Path, what: str) -> Path:
    path = Path(path).expanduser()
    if not path.exists():
        raise InputError(f"{what} {path}: no such file")
    if not path.is_file():
        raise InputError(f"{what} {path}: not a file; give the path of a text file")
    return path


LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"  # where str.splitlines splits ("\r\n" is one break)


def text_lines(path: str | Path, what: str, block: int = 1 << 16) -> Iterator[str]:
    """read_text(path, what).splitlines(keepends=True), a block at a time: a file of any length takes a block's
    memory. A file that is not UTF-8 is refused as read_text refuses it, when the reading reaches the bad byte."""
    path = _text_file(path, what)
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            rest = ""
            while text := f.read(block):
                lines = (rest + text).splitlines(keepends=True)
                last = lines[-1][-1]
                # a line without its break yet, or a "\r" that may be the first half of a "\r\n", waits for more
                rest = lines.pop() if last not in LINE_BREAKS or last == "\r" else ""
                yield from lines
            if rest:
                yield from rest.splitlines(keepends=True)
    except UnicodeDecodeError:
        read_text(path, what)  # names the line and the byte
        raise


def read_text(path: str | Path, what: str) -> str:
    """A UTF-8 text file, with a byte-order mark (as Windows Notepad saves) removed."""
    path = _text_file(path, what)
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise InputError(f"{what} {path} line {line}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset "
                         f"{e.start}); save the file as UTF-8") from None


def sentences(path: str | Path) -> list[str]:
    """One sentence per non-blank line."""
    kept = [line.strip() for line in read_text(path, "--sentences").splitlines() if line.strip()]
    if not kept:
        raise InputError(f"--sentences {path}: no sentences in the file (only blank lines); write one sentence "
                         "per line")
    return kept


def token_file(path: str | Path, what: str, min_tokens: int) -> np.ndarray:
    """A nanoGPT/PA6a token file: raw uint16 GPT-2 ids, enough of them for one training window."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise InputError(f"{what} {path}: no such file")
    size = path.stat().st_size
    if size % 2:
        raise InputError(f"{what} {path}: {size} bytes is not a whole number of uint16 token ids; give a file "
                         "written as numpy uint16 (nanoGPT's prepare.py)")
    ids = np.fromfile(path, dtype=np.uint16)
    check_token_count(ids, what, path, min_tokens)
    if len(ids) and int(ids.max()) >= GPT2_VOCAB:
        raise InputError(f"{what} {path}: token id {int(ids.max())} is outside GPT-2's vocabulary (0-"
                         f"{GPT2_VOCAB - 1}); was it written with another tokenizer?")
    return ids


def check_token_count(ids: np.ndarray, what: str, path, min_tokens: int) -> None:
    if len(ids) < min_tokens:
        raise InputError(f"{what} {path}: {len(ids)} GPT-2 tokens, fewer than the {min_tokens} that one training "
                         f"window needs (model.block_size + 2); give a longer text or lower model.block_size")
