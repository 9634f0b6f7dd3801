"""Audio manifests: existing recordings to evaluate, as CSV or TSV with id, audio path and reference, and
optionally the speaker reference each should sound like (a voice-cloning system's prompt audio)."""
from __future__ import annotations

import csv
from pathlib import Path

from pipeline.errors import InputError
from pipeline.io.inputs import read_text

ID = ("id", "utt_id", "utterance_id", "sentence_id")
AUDIO = ("audio", "audio_path", "path", "wav", "file")
TEXT = ("reference", "text", "ref", "transcript", "sentence")


SPEAKER_REFERENCE = ("speaker_reference", "prompt_wav", "prompt_audio")  # optional: for speaker similarity


def beside(manifest: Path, name: str) -> Path:
    """A path from a manifest: relative ones are taken from the manifest's folder."""
    path = Path(name).expanduser()
    return path if path.is_absolute() else manifest.parent / path


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
    """Rows of {id, audio_path, reference, speaker_reference}. Relative paths are taken from the manifest's folder.
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
    cref = next((h for h in reader.fieldnames if h.strip().lower() in SPEAKER_REFERENCE), None)
    rows, seen = [], set()
    for n, row in enumerate(reader, 2):
        uid = (row.get(cid) or "").strip()
        if not uid:
            raise ManifestError(f"--audio-manifest {path} line {n}: empty id; give every row an id")
        if "\0" in uid:
            raise ManifestError(f"--audio-manifest {path} line {n}: the id {uid!r} holds a NUL character, which "
                                "no text id has (a damaged or binary file?); mend that line")
        if uid in seen:
            raise ManifestError(f"--audio-manifest {path} line {n}: duplicate id {uid!r}; ids must be unique")
        seen.add(uid)
        reference = (row.get(cref) or "").strip() if cref else ""
        rows.append({"id": uid, "audio_path": str(beside(path, (row.get(caudio) or "").strip())),
                     "reference": (row.get(ctext) or "").strip(),
                     "speaker_reference": str(beside(path, reference)) if reference else ""})
    return rows
