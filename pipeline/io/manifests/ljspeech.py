"""LJSpeech's `metadata.csv`: `id|transcription|normalized transcription`, no header, the audio in `wavs/<id>.wav`
beside it. The reference is the normalized transcription where the line has one ("Mr." and "1850" spelled out
as spoken), the transcription as written otherwise: what the speaker actually said is the normalized one.

With --audio-dir (DIR, or SYSTEM=DIR,...), the folder holds a TTS system's `<id>.wav` of each line: those are
evaluated, and the corpus's own `wavs/<id>.wav` is each row's natural recording (what MCD and F0 error measure
against)."""
from __future__ import annotations

from pathlib import Path

from pipeline.io.manifests.base import Format, Recording, Reading, unnamed


def metadata(path: Path) -> Path:
    return path / "metadata.csv" if path.is_dir() else path


def read(reading: Reading) -> list[tuple[int, Recording]]:
    meta = metadata(reading.path)
    rows = []
    for n, line in reading.lines(meta):
        parts = line.split("|")
        if len(parts) not in (2, 3):
            raise reading.error(n, f"{len(parts)} '|'-separated fields; expected id|transcription|normalized "
                                  "transcription", meta)
        uid, text = parts[0].strip(), parts[-1].strip() or parts[1].strip()
        natural = str(meta.parent / "wavs" / f"{uid}.wav")
        if not reading.audio_dirs:
            rows.append((n, Recording(id=uid, audio_path=natural, reference=text)))
        for system, folder in reading.audio_dirs.items():
            rows.append((n, Recording(id=uid, audio_path=str(folder / f"{uid}.wav"), reference=text, system=system,
                                      natural=natural)))
    unnamed(reading, rows, meta.name)
    return rows


def detect(path: Path) -> bool:
    meta = metadata(path)
    if meta.name != "metadata.csv" or not meta.is_file() or not (meta.parent / "wavs").is_dir():
        return False
    with meta.open(encoding="utf-8", errors="replace") as f:
        head = next((line for line in f if line.strip()), "")
    return "|" in head and "file_name" not in head


def near(path: Path) -> str | None:
    meta = metadata(path)
    if meta.name != "metadata.csv" or not meta.is_file() or (meta.parent / "wavs").is_dir():
        return None
    with meta.open(encoding="utf-8", errors="replace") as f:
        head = next((line for line in f if line.strip()), "")
    return f"{meta} reads as LJSpeech's (id|text), but {meta.parent / 'wavs'} is missing" if "|" in head else None


FORMAT = Format("ljspeech", "LJSpeech: metadata.csv (id|text|normalized) with wavs/ beside it (--audio-dir: a "
                "system's <id>.wav, the corpus's wavs its natural recordings)", detect=detect, read=read, rank=30,
                near=near, takes_audio_dir=True)
