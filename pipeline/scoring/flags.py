"""Health flags: an utterance whose numbers a reader should look at before trusting them.

Flagged rows still count in WER (their errors are real); the flags say why a row looks the way it does."""
from __future__ import annotations

import zlib
from collections import Counter

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
    """The most times any n-gram (n ≤ MAX_NGRAM) occurs back to back. An n-gram repeated k times is a run of
    (k − 1)·n positions where a word equals the word n later, so one pass per n finds every repeat."""
    best = 1 if words else 0
    if len(set(words)) == len(words):  # no word twice: nothing repeats (most lines)
        return best
    for n in range(1, MAX_NGRAM + 1):
        run = 0
        for a, b in zip(words, words[n:]):
            run = run + 1 if a == b else 0
            if run // n + 1 > best:
                best = run // n + 1
    return best


def loops(ref: list[str], hyp: list[str]) -> bool:
    """An n-gram repeated REPEATS times back to back in the hypothesis, more often than any in the reference. Each
    of its words then occurs REPEATS times, so a hypothesis without such a word has none, and most lines skip the
    scan: at once when fewer words than REPEATS - 1 are seen twice, else after a count."""
    if len(hyp) - len(set(hyp)) < REPEATS - 1 or max(Counter(hyp).values()) < REPEATS:
        return False
    repeats = longest_repeat(hyp)
    return repeats >= REPEATS and repeats > longest_repeat(ref)


def flags(reference: str, hypothesis: str, level_dbfs: float | None, speech_expected: bool = True,
          words: tuple[list[str], list[str]] | None = None) -> list[str]:
    """Flags for one utterance from its normalized texts (`words`: the two split, where the caller has them) and
    the level of the audio the engine heard.

    `speech_expected` is False for the silence condition, where silent audio and an empty hypothesis are the
    right outcome, not a symptom."""
    ref, hyp = words or (reference.split(), hypothesis.split())
    out = []
    if speech_expected and level_dbfs is not None and level_dbfs < SILENT_DBFS:
        out.append("silent_audio")
    if speech_expected and ref and not hyp:
        out.append("empty_hypothesis")
    if compression_ratio(hypothesis) > COMPRESSION_RATIO or loops(ref, hyp):
        out.append("repetition")
    if len(hyp) > RUNAWAY_FACTOR * len(ref) + RUNAWAY_MIN:
        out.append("runaway_insertions")
    return out
