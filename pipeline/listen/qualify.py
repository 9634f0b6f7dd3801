"""P.808's qualification before a test, for every kind, each check played first in every session and answered in a
widget of its own, whatever the test's kind:

- the hearing check (`listen create --qualify`): three triplets of digits in the tool's own voice (Piper joe) in
  noise at falling SNRs, typed; a listener who cannot type the three digits at the easiest SNR does not hear well
  enough where they are (their hearing, their headphones or their room) and is left out, with the answer they
  gave; the two harder ones are kept in the results as a measure of each listener's conditions;
- the headphone check (`--headphones`; Woods, Siegel, Traer & McDermott 2017, "Headphone screening to facilitate
  web-based auditory experiments"): six trials of three 200 Hz tones, one 6 dB quieter, one in antiphase between
  the ears, in an order drawn per trial; the listener picks the quietest. Over headphones it is the quieter tone;
  over loudspeakers the antiphase one cancels in the air and sounds quietest. Fewer than five right leaves the
  listener out. Its clips are stereo, the only ones in a test, and made at the test's rate and left at their level:
  the tones' relation is what is asked. They tell nothing of a system, and no test clip is among them."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.listen import typed

ROLE = "qualification"
DIGITS = "zero one two three four five six seven eight nine".split()


@dataclass(frozen=True)
class Check:
    prefix: str  # of its trials' sentence ids, which name the check
    title: str

    def owns(self, sentence_id: str) -> bool:
        return sentence_id.startswith(self.prefix)

    def page(self) -> dict:
        raise NotImplementedError

    def refused(self, value: object) -> str | None:
        raise NotImplementedError

    def stored(self, value) -> tuple[int | None, str | None]:
        """An answer `refused` let through as the votes table keeps it: (value, text)."""
        raise NotImplementedError

    def make(self, maker) -> None:
        """Its trials, in a test being made (create.py's Maker), each with the answer it expects."""
        raise NotImplementedError

    def failed(self, votes: list) -> list[str]:
        """Why a listener's answers to this check leave them out."""
        raise NotImplementedError


@dataclass(frozen=True)
class Hearing(Check):
    snrs: tuple[float, ...] = (6.0, 0.0, -6.0)  # dB: the first must be heard; the others are recorded
    max_chars: int = 40

    def page(self) -> dict:
        return {"title": self.title, "widget": "text", "names": ["Recording"], "scale": [],
                "max_chars": self.max_chars}

    def refused(self, value: object) -> str | None:
        if not isinstance(value, str) or not value.strip():
            return "expected the digits heard, as text"
        if len(value) > self.max_chars:
            return f"an answer of {len(value)} characters: at most {self.max_chars}"
        return None

    def stored(self, value) -> tuple[int | None, str | None]:
        import unicodedata

        return None, unicodedata.normalize("NFC", value)

    def make(self, maker) -> None:
        from pipeline.listen.create import made
        from pipeline.tts import base as tts

        voice = tts.load("piper:joe")
        for snr in self.snrs:
            digits = [maker.rng.randrange(10) for _ in range(3)]
            samples, sr = voice.synthesize(", ".join(DIGITS[d] for d in digits) + ".")
            clip = made(ROLE, next(maker.pick), samples, sr)
            maker.trial(ROLE, maker.put(maker.variant(clip, ROLE, snr)), None, f"{self.prefix}{snr:+.0f}",
                        "".join(map(str, digits)))

    def failed(self, votes: list) -> list[str]:
        """The easiest triplet not typed as said."""
        easiest = f"{self.prefix}{self.snrs[0]:+.0f}"
        return [f"the hearing check at {self.snrs[0]:+.0f} dB SNR answered {v.raw!r}, the digits said were "
                f"{v.expected}" for v in votes if v.sentence == easiest and heard(str(v.raw)) != str(v.expected)]


def heard(typed_answer: str) -> str:
    """The digits of an answer, typed as digits or as words."""
    return "".join(w for w in typed.words(typed_answer) if w.isdigit())


TONE_HZ, TONE_S, RAMP_S, GAP_S = 200.0, 1.0, 0.1, 0.5  # Woods et al.'s tones, ramps and gaps
QUIETER_DB = 6.0
TONE_DBFS = -12.0  # the louder tones' peak: well clear of clipping, audible at a comfortable volume


@dataclass(frozen=True)
class Headphones(Check):
    trials: int = 6
    passes: int = 5  # of the six right: Woods et al.'s criterion

    def page(self) -> dict:
        return {"title": self.title, "widget": "scale", "names": ["Recording"],
                "scale": [[n, f"{n} {label}"] for n, label in ((1, "First"), (2, "Second"), (3, "Third"))]}

    def refused(self, value: object) -> str | None:
        return None if type(value) is int and value in (1, 2, 3) else "expected 1, 2 or 3: the quietest tone"

    def stored(self, value) -> tuple[int | None, str | None]:
        return value, None

    def make(self, maker) -> None:
        for n in range(1, self.trials + 1):
            order = maker.rng.sample(("quiet", "antiphase", "plain"), 3)
            samples = tones(order, maker.rate)
            maker.trial(ROLE, maker.put_as_made(ROLE, f"{self.prefix}{n}", samples), None, f"{self.prefix}{n}",
                        order.index("quiet") + 1)

    def failed(self, votes: list) -> list[str]:
        mine = [v for v in votes if self.owns(v.sentence)]
        right = sum(v.raw == v.expected for v in mine)
        if not mine or right >= self.passes:
            return []
        return [f"the headphone check: the quietest tone picked in {right} of {len(mine)} trials (headphones in both "
                f"ears pick it in {self.passes} or more; over loudspeakers the antiphase tone sounds quietest)"]


def tones(order: list[str], rate: int) -> np.ndarray:
    """Three tones, stereo (frames × 2), in `order`: `plain` at TONE_DBFS in both ears, `quiet` 6 dB below it,
    `antiphase` at TONE_DBFS with the right ear's wave inverted; each with raised-cosine ramps, GAP_S apart."""
    t = np.arange(int(TONE_S * rate)) / rate
    ramp = int(RAMP_S * rate)
    envelope = np.ones_like(t)
    envelope[:ramp] = 0.5 - 0.5 * np.cos(np.pi * np.arange(ramp) / ramp)
    envelope[-ramp:] = envelope[:ramp][::-1]
    wave = 10 ** (TONE_DBFS / 20) * envelope * np.sin(2 * np.pi * TONE_HZ * t)
    sides = {"plain": (wave, wave), "quiet": (wave * 10 ** (-QUIETER_DB / 20),) * 2, "antiphase": (wave, -wave)}
    gap = np.zeros((int(GAP_S * rate), 2))
    parts = []
    for k, name in enumerate(order):
        parts += ([gap] if k else []) + [np.stack(sides[name], axis=1)]
    return np.concatenate(parts).astype(np.float32)


HEARING = Hearing("digits-", "Hearing check: type the three digits you heard")
HEADPHONES = Headphones("tones-", "Headphone check: which of the three tones was the quietest?")
CHECKS = (HEARING, HEADPHONES)


def of(sentence_id: str) -> Check:
    """The check a qualification trial belongs to, by its sentence id."""
    return next(c for c in CHECKS if c.owns(sentence_id))


def failed(votes: list) -> list[str]:
    """Why a listener's qualification answers leave them out: each check's reasons."""
    return [reason for check in CHECKS for reason in check.failed([v for v in votes if check.owns(v.sentence)])]
