"""Audio manifests: existing recordings to evaluate, as CSV or TSV with id, audio path and reference."""
from __future__ import annotations

import csv
from pathlib import Path

from pipeline.errors import InputError
from pipeline.io.inputs import read_text

ID = ("id", "utt_id", "utterance_id", "sentence_id")
AUDIO = ("audio", "audio_path", "path", "wav", "file")
TEXT = ("reference", "text", "ref", "transcript", "sentence")


class ManifestError(InputError):
    pass


def _column(header: list[str], names: tuple[str, ...], what: str, path: Path) -> str:
    lowered = {h.strip().lower(): h for h in header}
    for name in names:
        if name in lowered:
            return lowered[name]
    raise ManifestError(f"--audio-manifest {path}: no {what} column; name one of {', '.join(names)} "
                        f"(found: {', '.join(header)})")


def read(path: str | Path) -> list[dict]:
    """Rows of {id, audio_path, reference}. Relative audio paths are taken from the manifest's folder.
    Missing audio is not an error here: the transcribe stage records it on that row."""
    path = Path(path)
    text = read_text(path, "--audio-manifest")
    first = text.splitlines()[0] if text.strip() else ""
    delimiter = "\t" if "\t" in first or path.suffix.lower() == ".tsv" else ","
    reader = csv.DictReader(text.splitlines(), delimiter=delimiter)
    if not reader.fieldnames:
        raise ManifestError(f"--audio-manifest {path}: empty manifest; expected a header with id, audio and "
                            "reference columns")
    cid = _column(reader.fieldnames, ID, "id", path)
    caudio = _column(reader.fieldnames, AUDIO, "audio path", path)
    ctext = _column(reader.fieldnames, TEXT, "reference text", path)
    rows, seen = [], set()
    for n, row in enumerate(reader, 2):
        uid = (row.get(cid) or "").strip()
        if not uid:
            raise ManifestError(f"--audio-manifest {path} line {n}: empty id; give every row an id")
        if uid in seen:
            raise ManifestError(f"--audio-manifest {path} line {n}: duplicate id {uid!r}; ids must be unique")
        seen.add(uid)
        audio = Path((row.get(caudio) or "").strip()).expanduser()
        if not audio.is_absolute():
            audio = path.parent / audio
        rows.append({"id": uid, "audio_path": str(audio), "reference": (row.get(ctext) or "").strip()})
    return rows
