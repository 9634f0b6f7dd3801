"""A Hugging Face audiofolder: a folder with `metadata.csv` or `metadata.jsonl`, whose `file_name` column names
each audio file (relative to the folder) and whose `transcription`, `text` or `sentence` column says what was
said. The id is an `id` column where there is one, else the file name without its extension; a `language` column
says what was spoken, which must be the run's --language."""
from __future__ import annotations

import csv
from pathlib import Path

from pipeline.io.manifests.base import NATURAL, Format, Recording, Reading, first

TEXT = ("transcription", "text", "sentence", "transcript")
ID = ("id", "utt_id", "utterance_id")
SYSTEM = ("system",)
SPEAKER_REFERENCE = ("speaker_reference", "prompt_wav", "prompt_audio")


def metadata(path: Path) -> Path | None:
    if path.is_file():
        return path if path.name in ("metadata.csv", "metadata.jsonl") else None
    return next((path / n for n in ("metadata.jsonl", "metadata.csv") if (path / n).is_file()), None)


def read(reading: Reading) -> list[tuple[int, Recording]]:
    meta = metadata(reading.path)
    folder = meta.parent
    if meta.suffix == ".jsonl":
        numbered = list(reading.json_lines(meta))
    else:
        reader = csv.DictReader(reading.text(meta).splitlines())
        numbered = [(n, row) for n, row in enumerate(reader, 2)]
        if reader.fieldnames is None:
            raise reading.error(None, "empty metadata.csv; expected a header with file_name and transcription", meta)
    rows = []
    for n, row in numbered:
        if None in row:
            raise reading.error(n, "more fields than the header has; quote a field that holds a comma", meta)
        name, text = first(row, ("file_name",)), first(row, TEXT)
        if name is None or text is None:
            raise reading.error(n, f"no {'file_name' if name is None else ' or '.join(TEXT)} field; an audiofolder's "
                                  f"metadata names each file_name and its {'/'.join(TEXT)}", meta)
        prompt, natural = first(row, SPEAKER_REFERENCE) or "", first(row, NATURAL) or ""
        rows.append((n, Recording(id=first(row, ID) or Path(name).stem, audio_path=str(folder / name), reference=text,
                                  system=first(row, SYSTEM) or "",
                                  speaker_reference=str(folder / prompt) if prompt else "",
                                  natural=str(folder / natural) if natural else "",
                                  language=first(row, ("language", "lang", "locale")) or "")))
    return rows


def header(meta: Path) -> str:
    with meta.open(encoding="utf-8-sig", errors="replace") as f:
        return next((line for line in f if line.strip()), "")


def detect(path: Path) -> bool:
    meta = metadata(path)
    if meta is None:
        return False
    return meta.suffix == ".jsonl" or "file_name" in header(meta)


def near(path: Path) -> str | None:
    meta = metadata(path)
    if meta is None or meta.suffix == ".jsonl" or "|" in header(meta):
        return None
    columns = next(csv.reader([header(meta)]), [])
    close = [c for c in columns if c.strip().lower().replace("-", "_") in ("filename", "file", "file_path", "path",
                                                                            "audio", "audio_path", "file name")]
    hint = f"; rename {close[0]!r} to file_name" if close else ""
    return (f"{meta} has no file_name column, which names each audio file in a Hugging Face audiofolder (its "
            f"header: {', '.join(columns) or 'empty'}){hint}")


FORMAT = Format("audiofolder", "a Hugging Face audiofolder: metadata.csv/.jsonl with file_name and transcription",
                detect=detect, read=read, rank=40, near=near)
