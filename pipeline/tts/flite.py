"""CMU flite voices (Debian `flite`): slt, awb, rms, kal. Cheap, distinct, robotic; English only."""
from __future__ import annotations

from dataclasses import replace

from pipeline.tts import base
from pipeline.tts.command import CommandVoice, program

VOICES = ("slt", "awb", "rms", "kal")


def load(source, options) -> CommandVoice:
    return CommandVoice(source, "flite", lambda v, text, wav: ["flite", "-voice", v, "-f", str(text),
                                                                       "-o", str(wav)],
                        "apt-get install flite (scripts/setup does this)")


def resolve(spec: str, options, models_dir: str):
    return replace(program("flite")(spec, options, models_dir), language="en")


base.VOICES.register("flite", load, resolve=resolve, names=VOICES)
