"""CMU flite voices (Debian `flite`): slt, awb, rms, kal. Cheap, distinct, robotic."""
from __future__ import annotations

from pipeline.config import ConfigError
from pipeline.tts import base
from pipeline.tts.command import CommandVoice

VOICES = ("slt", "awb", "rms", "kal")


def load(voice: str, options: dict) -> CommandVoice:
    return CommandVoice("flite", "flite", voice, lambda v, text, wav: ["flite", "-voice", v, "-f", str(text),
                                                                       "-o", str(wav)],
                        "apt-get install flite (scripts/setup does this)")


def check(voice: str) -> None:
    if voice not in VOICES:
        raise ConfigError(f"speech.voices: flite:{voice} is unknown; available: "
                          + ", ".join(f"flite:{v}" for v in VOICES))


base.register("flite", load, check)
