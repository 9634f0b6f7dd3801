"""CMU flite voices (Debian `flite`): slt, awb, rms, kal. Cheap, distinct, robotic."""
from __future__ import annotations

from pipeline.tts import base
from pipeline.tts.command import CommandVoice, program

VOICES = ("slt", "awb", "rms", "kal")


def load(source, options) -> CommandVoice:
    return CommandVoice(source, "flite", lambda v, text, wav: ["flite", "-voice", v, "-f", str(text),
                                                                       "-o", str(wav)],
                        "apt-get install flite (scripts/setup does this)")


base.VOICES.register("flite", load, resolve=program("flite"), names=VOICES)
