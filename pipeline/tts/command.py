"""Voices that are command-line programs writing a wav file (flite, espeak-ng)."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np
import soundfile as sf

from pipeline.core.source import Source
from pipeline.tts import base

Argv = Callable[[str, Path, Path], list[str]]  # (voice, text file, wav file) -> command line


class CommandVoice:
    """A voice spoken by `program`; the text goes through a file, so no text is ever taken for an option."""

    def __init__(self, source: Source, program: str, argv: Argv, install_hint: str, voice: str = "",
                 prepare: Callable[[str], str] = str):
        """`voice`: the program's voice, where it is not the source's name; `prepare`: the text as the program
        is given it."""
        if not source.files:
            raise base.VoiceUnavailable(f"{source.spec} needs the {program} program: {install_hint}")
        self.name = source.spec
        self.program, self.voice, self.argv, self.prepare = source.files[0], voice or source.name, argv, prepare

    def synthesize(self, text: str) -> tuple[np.ndarray, int]:
        text = self.prepare(base.speakable(text))
        with tempfile.TemporaryDirectory() as tmp:
            text_file, wav_file = Path(tmp) / "text.txt", Path(tmp) / "out.wav"
            text_file.write_text(text + "\n", encoding="utf-8")
            proc = subprocess.run(self.argv(self.voice, text_file, wav_file), capture_output=True, text=True,
                                  timeout=600)
            if proc.returncode != 0 or not wav_file.exists() or wav_file.stat().st_size == 0:
                raise RuntimeError(f"{self.program} failed (exit {proc.returncode}): {proc.stderr.strip()[:300]}")
            audio, sr = sf.read(wav_file, dtype="float32", always_2d=True)
        return audio.mean(axis=1), sr


def program(name: str) -> Callable[[str, object, str], Source]:
    """The resolver of a program's voices: the program file is the model (its voices are built in). A missing
    program resolves to no files, and its rows say how to install it; the other voices go on."""
    def resolve(spec: str, options, models_dir: str) -> Source:
        path = shutil.which(name)
        return Source(spec=spec, found="program", path=path or "", files=(path,) if path else ())
    return resolve
