"""Health flags: an utterance whose numbers a reader should look at before trusting them.

Flagged rows still count in WER (their errors are real); the flags say why a row looks the way it does."""
from __future__ import annotations

import zlib

SILENT_DBFS = -50.0  # loudest 30 ms frame below this: no speech energy (speech peaks far above -30 dBFS)
COMPRESSION_RATIO = 2.4  # Whisper's own threshold for a looping decode (transcribe.py compression_ratio_threshold)
REPEATS = 4  # the same n-gram this many times in a row, and more often than in the reference: a loop
MAX_NGRAM = 5
RUNAWAY_FACTOR, RUNAWAY_MIN = 2, 5  # hypothesis words > 2 × reference words + 5: far more than was said

NAMES = ("silent_audio", "empty_hypothesis", "repetition", "runaway_insertions")


def compression_ratio(text: str) -> float:
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data)) if data else 0.0


def longest_repeat(words: list[str]) -> int:
    """The most times any n-gram (n ≤ MAX_NGRAM) occurs back to back."""
    best = 1 if words else 0
    for n in range(1, MAX_NGRAM + 1):
        for start in range(len(words) - n + 1):
            gram, count, pos = words[start:start + n], 1, start + n
            while words[pos:pos + n] == gram:
                count, pos = count + 1, pos + n
            best = max(best, count)
    return best


def flags(reference: str, hypothesis: str, level_dbfs: float | None, speech_expected: bool = True) -> list[str]:
    """Flags for one utterance from its normalized texts and the level of the audio the engine heard.

    `speech_expected` is False for the silence condition, where silent audio and an empty hypothesis are the
    right outcome, not a symptom."""
    ref, hyp = reference.split(), hypothesis.split()
    out = []
    if speech_expected and level_dbfs is not None and level_dbfs < SILENT_DBFS:
        out.append("silent_audio")
    if speech_expected and ref and not hyp:
        out.append("empty_hypothesis")
    repeats = longest_repeat(hyp)
    if compression_ratio(hypothesis) > COMPRESSION_RATIO or (repeats >= REPEATS and repeats > longest_repeat(ref)):
        out.append("repetition")
    if len(hyp) > RUNAWAY_FACTOR * len(ref) + RUNAWAY_MIN:
        out.append("runaway_insertions")
    return out
