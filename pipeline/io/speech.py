"""Speech: one sentence spoken by one voice in one condition, as synthesis or a manifest of recordings
makes it (the speech artifact's rows)."""
from __future__ import annotations

from dataclasses import dataclass

from pipeline.core.records import SPOKEN, SpeechRow, one_of


@dataclass(frozen=True, slots=True, kw_only=True)
class Speech(SpeechRow):
    sentence_id: str
    voice: str  # family:voice; "" for recordings from an audio manifest
    condition: str  # clean, noise:snr=<dB>, speed:<factor>, silence
    audio_path: str  # the wav to hear; "" when nothing was made
    audio_seconds: float | None
    tts_seconds: float | None  # wall time of synthesis
    status: str
    error: str
    speaker_reference: str = ""  # the audio this row's voice should sound like (a voice-cloning prompt), if given
    natural: str = ""  # a natural recording of the same sentence (ground truth for MCD, F0 error), if given

    def __post_init__(self):
        one_of(self.status, SPOKEN, "status")

    @property
    def id(self) -> str:
        return self.speech_id
