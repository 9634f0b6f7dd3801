"""NeMo's JSON Lines manifest: one object per line with `audio_filepath` and `text`, and optionally `duration`
and `offset` (a segment of the file), `natural` (a natural recording of the same sentence), `lang` (the language
spoken, which must be the run's --language) and any other keys. `duration` cuts the audio only beside an offset: NeMo's
tools write it as the whole file's length, rounded, which must not clip a recording's end. The id is an `id` key where there is one, else the
audio file's name (with the offset, for segments of one file)."""
from __future__ import annotations

from pathlib import Path

from pipeline.io.manifests.base import NATURAL, Format, Recording, Reading, beside, first, seconds

ID = ("id", "utt_id", "utterance_id", "audio_id")
SPEAKER_REFERENCE = ("speaker_reference", "prompt_wav", "prompt_audio_filepath", "context_audio_filepath")


def read(reading: Reading) -> list[tuple[int, Recording]]:
    rows = []
    for n, row in reading.json_lines():
        audio, text = row.get("audio_filepath"), row.get("text")
        if not isinstance(audio, str) or not isinstance(text, str):
            missing = [k for k, v in (("audio_filepath", audio), ("text", text)) if not isinstance(v, str)]
            raise reading.error(n, f"no {' or '.join(missing)} string; a NeMo manifest line needs "
                                  '{"audio_filepath": ..., "text": ...}')
        offset = seconds(reading, n, row.get("offset"), "offset") or 0.0
        duration = seconds(reading, n, row.get("duration"), "duration") if offset else None
        uid = first(row, ID) or Path(audio).stem + (f"@{offset:g}" if offset else "")
        rows.append((n, Recording(id=uid, audio_path=beside(reading.path, audio), reference=text.strip(),
                                  system=first(row, ("system",)) or "", offset=offset, duration=duration,
                                  speaker_reference=beside(reading.path, first(row, SPEAKER_REFERENCE) or ""),
                                  natural=beside(reading.path, first(row, NATURAL) or ""),
                                  language=first(row, ("lang", "language", "locale")) or "")))
    return rows


def detect(path: Path) -> bool:
    return path.is_file() and path.suffix in (".jsonl", ".json") and path.name != "metadata.jsonl"


FORMAT = Format("nemo", "NeMo JSON Lines: audio_filepath, text[, duration, offset]", detect=detect, read=read,
                rank=20)
