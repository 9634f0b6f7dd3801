"""eSpeak NG voices (Debian `espeak-ng`), named by espeak's voice code: espeak:en-us, espeak:en-gb, ..."""
from __future__ import annotations

from pipeline.tts import base
from pipeline.tts.command import CommandVoice


def load(voice: str, options) -> CommandVoice:
    return CommandVoice("espeak", "espeak-ng", voice, lambda v, text, wav: ["espeak-ng", "-v", v, "-f", str(text),
                                                                            "-w", str(wav)],
                        "apt-get install espeak-ng (scripts/setup does this)")


base.VOICES.register("espeak", load)
