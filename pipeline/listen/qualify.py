"""P.808's qualification before a test (`listen create --qualify`), for every kind: a hearing check of digits in
noise, typed. Three triplets of digits in the tool's own voice (Piper joe) in speech-shaped babble of its own words
at falling SNRs, played first in every session; a listener who cannot type the three digits at the easiest SNR
does not hear well enough where they are (their hearing, their headphones or their room) and is left out, with the
answer they gave; the two harder ones are kept in the results as a measure of each listener's conditions."""
from __future__ import annotations

from pipeline.listen import typed

SNRS = (6.0, 0.0, -6.0)  # dB: the first must be heard; the others are recorded
ROLE = "qualification"
MAX_CHARS = 40
TITLE = "Hearing check: type the three digits you heard"
DIGITS = "zero one two three four five six seven eight nine".split()


def make(maker) -> None:
    """The qualification trials of a test being made (create.py's Maker), each expecting its digits."""
    from pipeline.listen.create import made
    from pipeline.tts import base as tts

    voice = tts.load("piper:joe")
    for snr in SNRS:
        digits = [maker.rng.randrange(10) for _ in range(3)]
        samples, sr = voice.synthesize(", ".join(DIGITS[d] for d in digits) + ".")
        like = next(maker.pick)
        clip = made(ROLE, like, samples, sr)
        maker.trial(ROLE, maker.put(maker.variant(clip, ROLE, snr)), None, f"digits-{snr:+.0f}",
                    "".join(map(str, digits)))


def page() -> dict:
    return {"title": TITLE, "widget": "text", "names": ["Recording"], "scale": [], "max_chars": MAX_CHARS}


def refused(value: object) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return "expected the digits heard, as text"
    if len(value) > MAX_CHARS:
        return f"an answer of {len(value)} characters: at most {MAX_CHARS}"
    return None


def heard(typed_answer: str) -> str:
    """The digits of an answer, typed as digits or as words."""
    return "".join(w for w in typed.words(typed_answer) if w.isdigit())


def failed(votes: list) -> list[str]:
    """Why a listener's qualification answers leave them out: the easiest triplet not typed as said."""
    easiest = f"digits-{SNRS[0]:+.0f}"
    return [f"the hearing check at {SNRS[0]:+.0f} dB SNR answered {v.raw!r}, the digits said were "
            f"{v.expected}" for v in votes if v.sentence == easiest and heard(str(v.raw)) != str(v.expected)]
