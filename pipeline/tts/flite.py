"""CMU flite voices (Debian `flite`): slt, awb, rms, kal. Cheap, distinct, robotic."""
from __future__ import annotations

from pipeline.tts import base
from pipeline.tts.command import CommandVoice

VOICES = ("slt", "awb", "rms", "kal")


def load(voice: str, options) -> CommandVoice:
    return CommandVoice("flite", "flite", voice, lambda v, text, wav: ["flite", "-voice", v, "-f", str(text),
                                                                       "-o", str(wav)],
                        "apt-get install flite (scripts/setup does this)")


base.VOICES.register("flite", load, names=VOICES)
