"""eSpeak NG voices (Debian `espeak-ng`), named by espeak's voice code: espeak:en-us, espeak:en-gb, ..."""
from __future__ import annotations

from pipeline.tts import base
from pipeline.tts.command import CommandVoice, program


def load(source, options) -> CommandVoice:
    return CommandVoice(source, "espeak-ng", lambda v, text, wav: ["espeak-ng", "-v", v, "-f", str(text),
                                                                            "-w", str(wav)],
                        "apt-get install espeak-ng (scripts/setup does this)")


base.VOICES.register("espeak", load, resolve=program("espeak-ng"))
