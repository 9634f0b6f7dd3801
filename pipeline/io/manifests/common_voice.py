"""Mozilla Common Voice's TSV (validated.tsv, test.tsv, …): a header with `client_id`, `path` and `sentence`, and
`locale` in releases since 2021. `path` names a clip in the `clips/` folder beside the TSV (MP3 in the releases,
read by libsndfile); the id is the clip's name without its extension (a sentence is read by many speakers, so
`sentence_id` is no row's id); `locale` is the language spoken, which must be the run's --language."""
from __future__ import annotations

import csv
from pathlib import Path

from pipeline.io.manifests.base import Format, Recording, Reading

COLUMNS = ("client_id", "path", "sentence")


def header(path: Path) -> list[str]:
    with path.open(encoding="utf-8", errors="replace") as f:
        return [h.strip().lower() for h in f.readline().rstrip("\r\n").split("\t")]


def detect(path: Path) -> bool:
    return path.is_file() and path.suffix.lower() == ".tsv" and all(c in header(path) for c in COLUMNS)


def read(reading: Reading) -> list[tuple[int, Recording]]:
    lines = reading.text().splitlines()
    reader = csv.DictReader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)  # its sentences hold bare quotes
    clips = reading.path.parent / "clips"
    rows = []
    for n, row in enumerate(reader, 2):
        if None in row:
            raise reading.error(n, f"more fields than the header's {len(reader.fieldnames)}; a Common Voice TSV has "
                                   "one tab between fields and none inside them")
        name = (row.get("path") or "").strip()
        if not name:
            raise reading.error(n, "no path; each row names its clip in the clips/ folder beside the TSV")
        audio = clips / name if (clips / name).is_file() or not (reading.path.parent / name).is_file() \
            else reading.path.parent / name
        rows.append((n, Recording(id=Path(name).stem, audio_path=str(audio),
                                  reference=(row.get("sentence") or "").strip(),
                                  language=(row.get("locale") or "").strip())))
    return rows


FORMAT = Format("common-voice", "Mozilla Common Voice TSV: client_id, path (in clips/), sentence[, locale]",
                detect=detect, read=read, rank=25)
