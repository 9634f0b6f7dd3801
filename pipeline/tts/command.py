"""Voices that are command-line programs writing a wav file (flite, espeak-ng)."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf

from pipeline.tts import base


def run_to_wav(argv_for: callable, text: str, program: str, install_hint: str) -> tuple[np.ndarray, int]:
    """Write `text` to a file, run `argv_for(text_file, wav_file)`, read the wav back as float32 mono."""
    if shutil.which(program) is None:
        raise base.VoiceUnavailable(f"{program} is not installed: {install_hint}")
    with tempfile.TemporaryDirectory() as tmp:
        text_file, wav_file = Path(tmp) / "text.txt", Path(tmp) / "out.wav"
        text_file.write_text(text + "\n", encoding="utf-8")
        proc = subprocess.run(argv_for(text_file, wav_file), capture_output=True, text=True, timeout=600)
        if proc.returncode != 0 or not wav_file.exists() or wav_file.stat().st_size == 0:
            raise RuntimeError(f"{program} failed (exit {proc.returncode}): {proc.stderr.strip()[:300]}")
        audio, sr = sf.read(wav_file, dtype="float32", always_2d=True)
    return audio.mean(axis=1), sr

