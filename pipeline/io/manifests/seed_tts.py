"""seed-tts-eval's meta.lst: `utt|prompt_text|prompt_wav|infer_text`, and the forms its scripts also read:
`utt|infer_text`, `utt|infer_text|prompt_wav` and `utt|prompt_text|prompt_wav|infer_text|gt_wav`. The generated
audio is `<utt>.wav` in --audio-dir (one folder per system: SYSTEM=DIR,...). The reference is infer_text, the
text the system was asked to say; prompt_wav, from the meta.lst's folder, is the voice it was asked to clone, and
gt_wav, where the line has one, the natural recording of infer_text (MCD and F0 error measure against it)."""
from __future__ import annotations

from pathlib import Path

from pipeline.io.manifests.base import Format, Recording, Reading, beside, unnamed

FIELDS = {2: ("utt", "infer_text"), 3: ("utt", "infer_text", "prompt_wav"),
          4: ("utt", "prompt_text", "prompt_wav", "infer_text"),
          5: ("utt", "prompt_text", "prompt_wav", "infer_text", "gt_wav")}


def read(reading: Reading) -> list[tuple[int, Recording]]:
    rows = []
    for n, line in reading.lines():
        parts = line.strip().split("|")
        if len(parts) not in FIELDS:
            raise reading.error(n, f"{len(parts)} '|'-separated fields; expected "
                                  + " or ".join("|".join(f) for f in FIELDS.values()))
        row = dict(zip(FIELDS[len(parts)], parts))
        utt = row["utt"].strip()
        if len(parts) == 3 and utt.endswith(".wav"):  # as seed-tts-eval's own reader strips it in that form
            utt = utt[:-4]
        prompt = beside(reading.path, row.get("prompt_wav", "").strip())
        natural = beside(reading.path, row.get("gt_wav", "").strip())
        for system, folder in reading.audio_dirs.items():
            rows.append((n, Recording(id=utt, audio_path=str(folder / f"{utt}.wav"), reference=row["infer_text"],
                                      speaker_reference=prompt, system=system, natural=natural)))
    unnamed(reading, rows, reading.path.name)
    return rows


def detect(path: Path) -> bool:
    if not path.is_file():
        return False
    if path.suffix == ".lst":
        return True
    with path.open(encoding="utf-8", errors="replace") as f:
        head = next((line for line in f if line.strip()), "")
    return "|" in head and "\t" not in head and not head.lstrip().startswith("{") and path.name != "metadata.csv"


FORMAT = Format("seed-tts", "seed-tts-eval's meta.lst (utt|prompt_text|prompt_wav|infer_text) with --audio-dir",
                detect=detect, read=read, rank=10, needs_audio_dir=True)
