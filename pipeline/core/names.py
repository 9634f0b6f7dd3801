"""File names made from names that come from outside: ids from a manifest, voice and engine specs, conditions.

An id is a name, not a path. `file_name` maps any text to one file name that stays inside its folder, is
unique, and reads back to the text: every character outside a small safe set is %-escaped as its UTF-8 bytes
(so `/`, `..`, NUL and `~` cannot act as path syntax), a leading dot is escaped, and names that a
case-insensitive file system (macOS, Windows) would merge get a suffix telling them apart. `inside` checks a
built path where it is built, so no input can ever name a file outside the run."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-+=,:@")
MAX_BODY = 150  # bytes of escaped text kept before a long name is cut; file systems allow 255 per name


def escape(text: str) -> str:
    """`text` with every character outside SAFE written as %xx (lower-case hex) of its UTF-8 bytes, and a
    leading dot escaped; `urllib.parse.unquote` reads it back."""
    out = []
    for i, ch in enumerate(text):
        if ch in SAFE and not (i == 0 and ch == "."):
            out.append(ch)
        else:
            out.extend(f"%{b:02x}" for b in ch.encode("utf-8", "surrogatepass"))
    return "".join(out)


def file_name(text: str) -> str:
    """A safe, unique file name for `text` (without an extension).

    Names whose escaped form has upper-case letters get `~` and a hash of the exact text, so `Utt1` and `utt1`
    stay two files where the file system ignores case; a name over MAX_BODY bytes is cut there and gets the
    hash too. `~` is always escaped in the body, so the part before it is the escaped text (the whole text
    whenever it was not cut)."""
    if not text:
        raise ValueError("an empty name has no file name")
    body = escape(text)
    if len(body) <= MAX_BODY and body == body.lower():
        return body
    cut = body[:MAX_BODY]
    if "%" in cut[-2:]:  # never split an escape
        cut = cut[:cut.rindex("%")]
    return f"{cut}~{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}"


def inside(root: str | Path, *parts: str) -> Path:
    """`root` joined with `parts`, refused (ValueError) unless it stays inside `root`: the last guard where a
    path is built from names."""
    path = Path(root).joinpath(*parts)
    real_root = os.path.realpath(root)
    if os.path.commonpath([real_root, os.path.realpath(path)]) != real_root or "\0" in str(path):
        raise ValueError(f"{path} would lie outside {root}")
    return path
