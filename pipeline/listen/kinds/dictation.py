"""The `transcribe` kind: typed transcription (dictation, as the Blizzard Challenge's intelligibility tests). Each
clip is played once (by default; `--plays N`), the listener types what they heard, and their answers are scored as
an engine's transcript is (listen/typed.py): each system's listeners' WER, strict and tolerant, micro and macro, with the listeners ×
sentences bootstrap, beside every engine of the runs on the very same clips.

Acceptance: a trapping trial breaks off into the tool's voice asking for one word ("Please type the word orange"),
which the answer must hold; a gold trial is a recording whose words a careful listener gets (a natural recording,
the runs' speaker references, or the tool's own clean voice reading a plain sentence), and an answer that misses
more than half of its words (strict WER above GOLD_WER) leaves the listener out."""
from __future__ import annotations

import unicodedata
from collections import defaultdict
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from pipeline.core.records import joined
from pipeline.errors import InputError
from pipeline.listen import analysis, typed
from pipeline.listen.create import HEAVY, Maker, made, user_gold
from pipeline.listen.kinds import KINDS
from pipeline.listen.kinds.base import Kind
from pipeline.scoring.align import Op
from pipeline.scoring.paired import resampled_weights

MAX_CHARS = 500  # an answer's length, in characters: a sentence typed, not a paste
GOLD_WER = 0.5  # a gold trial answered with more than half its words missed
TRAP_WORDS = ("orange", "window", "garden", "yellow", "pencil", "river", "basket", "candle")
CLEAR = "The sun is warm and the sky is blue today."  # the tool's clean gold, where the runs have no natural one
LISTENERS = "listeners"


@dataclass(frozen=True, kw_only=True)
class Answer:
    """One typed answer, scored (answers.csv): what was typed, verbatim, and how it aligns with the sentence."""
    listener: str
    system: str
    sentence: str
    reference: str  # the sentence as the run had it
    typed: str  # as the listener typed it (NFC)
    words: int  # in the normalized sentence
    errors: int  # strict: S + D + I
    tolerant_errors: int
    alignment: str  # the normalized words: a hit as itself, `ref→typed`, `-ref` (missed), `+typed` (added)
    forgiven: list[str] = joined(sep="; ")  # `ref→typed (rule)` for each word a tolerant rule counted right


@dataclass(frozen=True, kw_only=True)
class Heard:
    """A system's sentences as its listeners typed them, or as one engine transcribed the very same clips
    (heard.csv): WER strict and tolerant, micro (pooled) and macro (the mean of the answers'), each with a 95% CI
    from the listeners × sentences bootstrap (sentences alone for an engine)."""
    system: str
    by: str  # listeners, or the engine
    answers: int
    words: int
    micro_wer: float | None
    micro_ci95_low: float | None
    micro_ci95_high: float | None
    macro_wer: float | None
    macro_ci95_low: float | None
    macro_ci95_high: float | None
    tolerant_micro_wer: float | None
    tolerant_micro_ci95_low: float | None
    tolerant_micro_ci95_high: float | None
    tolerant_macro_wer: float | None
    tolerant_macro_ci95_low: float | None
    tolerant_macro_ci95_high: float | None


def _rounded(x) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), 4)


def heard(system: str, by: str, scored: list[tuple[str, str, typed.Scored]], n_boot: int, seed: int) -> Heard:
    """The figures of `scored`, each (listener, sentence, its scoring)."""
    listeners, _ = analysis.index([who for who, _, _ in scored])
    items, _ = analysis.index([sentence for _, sentence, _ in scored])
    words = np.array([s.strict.ref_words for _, _, s in scored], dtype=float)
    weights = resampled_weights(listeners, items, n_boot, seed)
    figures = {}
    for name, errors in (("", [s.strict.errors for _, _, s in scored]),
                         ("tolerant_", [s.tolerant_errors for _, _, s in scored])):
        errors = np.array(errors, dtype=float)
        has = words > 0
        rates = np.where(has, errors / np.where(has, words, 1), np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            micro = (weights * errors).sum(axis=1) / (weights * words).sum(axis=1)
            macro = (weights[:, has] * rates[has]).sum(axis=1) / weights[:, has].sum(axis=1)
        figures[f"{name}micro_wer"] = _rounded(errors.sum() / words.sum()) if words.sum() else None
        figures[f"{name}micro_ci95_low"], figures[f"{name}micro_ci95_high"] = analysis.interval(micro)
        figures[f"{name}macro_wer"] = _rounded(np.nanmean(rates)) if has.any() else None
        figures[f"{name}macro_ci95_low"], figures[f"{name}macro_ci95_high"] = analysis.interval(macro)
    return Heard(system=system, by=by, answers=len(scored), words=int(words.sum()), **figures)


def shown(s: typed.Scored) -> str:
    return " ".join(r if op is Op.HIT else f"{r}→{h}" if op is Op.SUBSTITUTION else f"-{r}" if op is Op.DELETION
                    else f"+{h}" for op, r, h in s.strict.ops)


@dataclass(frozen=True, kw_only=True)
class Transcription(Kind):
    widget: ClassVar[str] = "text"
    plays: ClassVar[int] = 1  # as Blizzard plays a sentence: once
    varies: ClassVar[bool] = False  # a listener who gets every word right has listened

    @property
    def expects(self) -> str:
        return f"value: the words heard, as text of at most {MAX_CHARS} characters"

    def said(self, value) -> str:
        return repr(value)

    @property
    def metric(self) -> str:
        return "listeners_wer"

    # making the test

    def test_trials(self, maker: Maker) -> None:
        for (_, sentence), cid in maker.rated.items():
            maker.trial("test", cid, None, sentence)

    def gold_trials(self, maker: Maker) -> list[str]:
        """The user's gold recordings (`--gold`: audio and the text it says), else a natural recording whose words
        are known, else the tool's own clean voice reading a plain sentence. No gold in heavy noise: no careful
        listener gets its words."""
        if maker.options.gold:
            user_gold(maker)
            return []
        said = [n for n in maker.naturals if n.reference_text]  # a speaker reference's own words are not known
        if said:
            maker.trial("gold", maker.put(maker.variant(said[0], "gold", None)), None, said[0].sentence_id,
                        said[0].reference_text)
            return []
        from pipeline.tts import base as tts

        like = next(maker.pick)
        samples, sr = tts.load("piper:joe").synthesize(CLEAR)
        maker.trial("gold", maker.put(made("gold", like, samples, sr)), None, like.sentence_id, CLEAR)
        return ["the gold trial is the tool's own voice (piper:joe) reading a plain sentence: the runs have no "
                "natural recording whose words are known, and no --gold was given"]

    def gold_answer(self, text: str) -> str:
        if not text.strip():
            raise ValueError("an empty expected text")
        return unicodedata.normalize("NFC", text)

    def trap(self, rng) -> tuple[str, str]:
        word = rng.choice(TRAP_WORDS)
        return word, f"Please type the word {word}."

    def training_trial(self, maker: Maker, clip, snr: float | None) -> None:
        if snr != HEAVY:  # a clip in -5 dB of noise teaches nothing about typing what one hears
            super().training_trial(maker, clip, snr)

    # the listener's page

    def page(self, clips: list[str]) -> dict:
        return {"title": self.title, "widget": self.widget, "names": ["Recording"], "scale": [],
                "max_chars": MAX_CHARS}

    def refused(self, value: object) -> str | None:
        if not isinstance(value, str):
            return f"expected {self.expects}"
        if not value.strip():
            return "an empty answer: type the words you heard, or - if you heard none"
        if len(value) > MAX_CHARS:
            return f"an answer of {len(value)} characters: at most {MAX_CHARS}"
        control = sorted({f"U+{ord(c):04X}" for c in value if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co")})
        if control:
            return f"an answer with control characters ({', '.join(control[:5])}): type the words only"
        return None

    def stored(self, value) -> tuple[int | None, str | None]:
        return None, unicodedata.normalize("NFC", value)

    # reading the answers

    def answered_as_asked(self, vote: analysis.Vote) -> bool:
        return isinstance(vote.raw, str) and str(vote.expected) in typed.words(vote.raw)

    @property
    def gold_rule(self) -> str:
        return f"with more than {GOLD_WER:.0%} of the words missed"

    def gold_missed(self, vote: analysis.Vote) -> bool:
        found = typed.score(str(vote.expected), str(vote.value))
        return found.strict.wer is not None and found.strict.wer > GOLD_WER

    def analyse(self, result: analysis.Analysis, kept: list[analysis.Vote], clips: dict, n_boot: int,
                seed: int) -> None:
        answers, by_system = [], defaultdict(list)
        for v in kept:
            clip = clips[v.first]
            s = typed.score(clip["reference"], str(v.value))
            by_system[clip["system"]].append((v.name, v.sentence, s))
            answers.append(Answer(listener=v.name, system=clip["system"], sentence=v.sentence,
                                  reference=clip["reference"], typed=str(v.value), words=s.strict.ref_words,
                                  errors=s.strict.errors, tolerant_errors=s.tolerant_errors, alignment=shown(s),
                                  forgiven=[f"{r}→{h} ({rule})" for r, h, rule in s.rules]))
        rows = []
        for system, scored in sorted(by_system.items()):
            rows.append(heard(system, LISTENERS, scored, n_boot, seed))
            rated = {v.first for v in kept if clips[v.first]["system"] == system}
            engines = sorted({e for c in rated for e in clips[c]["heard"]})
            for engine in engines:
                machine = [(engine, clips[c]["sentence"], typed.score(clips[c]["reference"], clips[c]["heard"][engine]))
                           for c in sorted(rated) if engine in clips[c]["heard"]]
                rows.append(heard(system, engine, machine, n_boot, seed))
        result.tables = {"heard": rows, "answers": sorted(answers, key=lambda a: (a.system, a.sentence,
                                                                                   a.listener))}

    def human(self, test: str, kept: list[analysis.Vote], origin, clips: dict):
        raise InputError(f"listening test {test!r} is a transcription test: compare-runs does not gate on "
                         "listeners' WER yet; read it with `listen results`")

    def lines(self, found: analysis.Analysis) -> list[str]:
        rows = found.tables.get("heard", [])
        out = [f"{'system':<24} {'heard by':<28} {'answers':>7}  WER strict [95% CI]       tolerant [95% CI]"]
        for h in rows:
            out.append(f"{h.system:<24} {h.by:<28} {h.answers:>7}  "
                       f"{_ci(h.micro_wer, h.micro_ci95_low, h.micro_ci95_high):<24}  "
                       f"{_ci(h.tolerant_micro_wer, h.tolerant_micro_ci95_low, h.tolerant_micro_ci95_high)}")
        return out if rows else []


def _ci(value, low, high) -> str:
    if value is None:
        return "-"
    return f"{value:.3f} [{low:.3f}, {high:.3f}]" if low is not None else f"{value:.3f}"


KINDS.register(Transcription(
    name="transcribe", summary="listeners type what they hear, scored as WER beside each engine's",
    title="Type the words you heard", scale=()))
