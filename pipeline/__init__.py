"""Speech evaluation pipeline: a small GPT writes sentences, TTS voices speak them, Whisper transcribes
them, and WER with a full alignment breakdown scores the round trip."""

__version__ = "0.1.0"
