"""CSV or TSV with a header: id, audio path and reference columns (several spellings each), and optionally the
system that made each row, the speaker reference it should sound like, and a natural recording of the same
sentence (`natural`, for MCD and F0 error). Read when no other format claims the
file."""
from __future__ import annotations

import csv

from pipeline.io.manifests.base import NATURAL, Format, Recording, Reading, beside

ID = ("id", "utt_id", "utterance_id", "sentence_id")
AUDIO = ("audio", "audio_path", "path", "wav", "file")
TEXT = ("reference", "text", "ref", "transcript", "sentence")
SYSTEM = ("system", "tts", "tts_system")
SPEAKER_REFERENCE = ("speaker_reference", "prompt_wav", "prompt_audio")  # for speaker similarity


def column(reading: Reading, header: list[str], names: tuple[str, ...], what: str) -> str:
    lowered = {h.strip().lower(): h for h in header}
    for name in names:
        if name in lowered:
            return lowered[name]
    raise reading.error(None, f"no {what} column; name one of {', '.join(names)} (found: {', '.join(header)})")


def read(reading: Reading) -> list[tuple[int, Recording]]:
    text = reading.text()
    first = text.splitlines()[0] if text.strip() else ""
    delimiter = "\t" if "\t" in first or reading.path.suffix.lower() == ".tsv" else ","
    reader = csv.DictReader(text.splitlines(), delimiter=delimiter)
    if not reader.fieldnames:
        raise reading.error(None, "empty manifest; expected a header with id, audio and reference columns")
    cid = column(reading, reader.fieldnames, ID, "id")
    caudio = column(reading, reader.fieldnames, AUDIO, "audio path")
    ctext = column(reading, reader.fieldnames, TEXT, "reference text")
    optional = {h.strip().lower(): h for h in reader.fieldnames}
    csystem = next((optional[n] for n in SYSTEM if n in optional), None)
    cref = next((optional[n] for n in SPEAKER_REFERENCE if n in optional), None)
    cnatural = next((optional[n] for n in NATURAL if n in optional), None)
    rows = []
    for n, row in enumerate(reader, 2):
        if None in row:
            raise reading.error(n, f"{len(reader.fieldnames) + len(row[None])} fields where the header has "
                                  f"{len(reader.fieldnames)}; quote a field that holds the delimiter")
        rows.append((n, Recording(id=(row.get(cid) or "").strip(), audio_path=beside(reading.path, (row.get(caudio) or "").strip()),
                                  reference=(row.get(ctext) or "").strip(),
                                  system=(row.get(csystem) or "").strip() if csystem else "",
                                  speaker_reference=beside(reading.path, (row.get(cref) or "").strip()) if cref else "",
                                  natural=beside(reading.path, (row.get(cnatural) or "").strip()) if cnatural else "")))
    return rows


FORMAT = Format("csv", "CSV or TSV with a header: id, audio, reference[, system, speaker_reference, natural]",
                detect=lambda path: path.is_file(), read=read)
