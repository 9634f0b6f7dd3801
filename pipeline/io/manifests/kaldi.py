"""A Kaldi data directory: `wav.scp` (recording id → wav path) and `text` (utterance id → words), with
`segments` (utterance id → recording id, start and end seconds) when utterances are parts of recordings.
Piped wav.scp entries (`sox … |`) and archive offsets (`file.ark:123`) are commands or binary archives, not
audio files: refused, with how to write them out as wavs."""
from __future__ import annotations

from pathlib import Path

from pipeline.io.manifests.base import Format, Recording, Reading, beside, seconds


def table(reading: Reading, path: Path, fields: int, expected: str) -> dict[str, tuple[int, list[str]]]:
    out = {}
    for n, line in reading.lines(path):
        parts = line.split(maxsplit=fields - 1) if fields else line.split(maxsplit=1)
        if len(parts) < (fields or 1):
            raise reading.error(n, f"expected {expected}", path)
        if parts[0] in out:
            raise reading.error(n, f"{parts[0]!r} listed twice (first on line {out[parts[0]][0]})", path)
        out[parts[0]] = (n, parts[1:])
    return out


def wav_path(reading: Reading, scp: Path, n: int, entry: str) -> str:
    entry = entry.strip()
    if entry.endswith("|") or entry.startswith("|"):
        raise reading.error(n, f"a piped command ({entry!r}), not a file; run it to write a wav (e.g. `sox … out.wav`) "
                              "and list that wav's path in wav.scp", scp)
    if ".ark:" in entry or entry.endswith(".ark"):
        raise reading.error(n, f"an archive entry ({entry!r}), not a wav file; write the recordings out as wavs "
                              "(e.g. Kaldi's wav-copy … ark,scp:…) and list the wavs in wav.scp", scp)
    return beside(scp.parent / "wav.scp", entry) if not Path(entry).is_absolute() else entry


def read(reading: Reading) -> list[tuple[int, Recording]]:
    folder = reading.path if reading.path.is_dir() else reading.path.parent
    scp_path, text_path, seg_path = folder / "wav.scp", folder / "text", folder / "segments"
    for needed in (scp_path, text_path):
        if not needed.is_file():
            raise reading.error(None, f"a Kaldi data dir needs {needed.name}; {needed} is missing")
    scp = table(reading, scp_path, 2, "<recording-id> <wav path>")
    texts = table(reading, text_path, 0, "<utterance-id> <words>")
    segments = table(reading, seg_path, 4, "<utterance-id> <recording-id> <start> <end>") if seg_path.is_file() else {}
    rows = []
    for uid, (n, words) in texts.items():
        reference = words[0].strip() if words else ""
        offset, duration, recording = 0.0, None, uid
        if segments:
            if uid not in segments:
                raise reading.error(n, f"utterance {uid!r} has no line in segments", text_path)
            m, (recording, start, end) = segments[uid]
            offset = seconds(reading, m, start, "start") or 0.0
            stop = float(end) if end.strip() == "-1" else seconds(reading, m, end, "end")
            if stop is not None and stop >= 0:
                if stop <= offset:
                    raise reading.error(m, f"segment {uid!r} ends ({end}) before it starts ({start})", seg_path)
                duration = stop - offset
        if recording not in scp:
            rows.append((n, Recording(id=uid, audio_path="", reference=reference,
                                      problem=f"no wav.scp entry for recording {recording!r} ({scp_path})")))
            continue
        line, (entry,) = scp[recording]
        rows.append((n, Recording(id=uid, audio_path=wav_path(reading, scp_path, line, entry), reference=reference,
                                  offset=offset, duration=duration)))
    used = {segments[uid][1][0] if segments else uid for uid in texts if not segments or uid in segments}
    for recording, (line, _) in scp.items():
        if recording not in used:
            reading.skip(scp_path, line, recording, "a recording no utterance of text comes from"
                        + (" (through segments)" if segments else "") + ": it has no transcript")
    for uid, (line, _) in segments.items():
        if uid not in texts:
            reading.skip(seg_path, line, uid, "a segment whose utterance has no line in text")
    return rows


def detect(path: Path) -> bool:
    folder = path if path.is_dir() else path.parent
    return (folder / "wav.scp").is_file() and (path.is_dir() or path.name in ("wav.scp", "text", "segments"))


def near(path: Path) -> str | None:
    folder = path if path.is_dir() else path.parent
    if (folder / "text").is_file() and not (folder / "wav.scp").is_file():
        return f"{folder} has a text file but no wav.scp (each recording id and its wav path)"
    return None


FORMAT = Format("kaldi", "a Kaldi data dir: wav.scp and text[, segments]", detect=detect, read=read, rank=50,
                near=near)
