"""The `transcribe` kind: typed transcription (dictation, as the Blizzard Challenge's intelligibility tests). Each
clip is played once (by default; `--plays N`), the listener types what they heard, and their answers are scored as
an engine's transcript is (listen/typed.py): each system's listeners' WER, strict and tolerant, micro and macro,
with the listeners × sentences bootstrap, beside every engine of the runs on the very same clips; and, with the
sentences' sets (`listen sentences`, `listen create --sets`), how much context helps people and each engine; over
several of the runs' noise conditions (`listen create --condition clean,noise:snr=10,...`), each voice's WER by
SNR and its breakdown SNR for people beside each engine (listen/noise.py). A listener types each sentence once,
whatever its system and condition (`each_sentence_once`). A test is in its runs' one language, and scores in their
unit (characters for Chinese and Japanese: its rates are CERs).

Acceptance: a trapping trial breaks off into the tool's voice asking for one word ("Please type the word orange"; a
number in a test of another language), which the answer must hold; a gold trial is a recording whose words a
careful listener gets (the user's, a natural recording whose words are known, or the tool's own clean voice
reading a plain sentence), and an answer that misses more than half of its words (tolerant WER above GOLD_WER)
leaves the listener out."""
from __future__ import annotations

import unicodedata
from collections import defaultdict
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from pipeline.core.records import joined
from pipeline.errors import InputError
from pipeline.listen import analysis, noise, typed
from pipeline.listen.results import ci_text
from pipeline.listen.create import HEAVY, Maker, made, user_gold
from pipeline.listen.kinds import KINDS
from pipeline.listen.kinds.base import Kind
from pipeline.scoring import language
from pipeline.scoring.align import Op
from pipeline.scoring.paired import resampled_counts, resampled_weights

MAX_CHARS = 500  # an answer's length, in characters: a sentence typed, not a paste
GOLD_WER = 0.5  # a gold trial answered with more than half its words missed
TRAP_WORDS = ("orange", "window", "garden", "yellow", "pencil", "river", "basket", "candle")
# a trap in a test of another language asks for a number: a digit is typed alike on every keyboard, where an input
# method in kana or Hangul turns "orange" typed in letters into other characters
TRAP_DIGITS = range(3, 10)  # said as typed.SMALL's words
NUMERALS = "〇一二三四五六七八九"  # Chinese and Japanese digits, which an input method offers for a number heard
CLEAR = "The sun is warm and the sky is blue today."  # the tool's clean gold, where the runs have no natural one
PRACTICE = ("A small boat sailed across the quiet lake.", "Please bring the red cup to the kitchen.",
            "The children played in the park after school.", "My brother reads the news every morning.")
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
    unit: str  # what the rates count: words, or characters in a language written without spaces (its runs' unit)


@dataclass(frozen=True, kw_only=True)
class WordHeard:
    """One word of a rated sentence, as its listeners and one engine heard the same clip (words.csv): missed by
    the listeners when more than half of them missed it (deleted or substituted, strictly)."""
    system: str
    sentence: str
    position: int  # in the normalized sentence, from 1
    word: str
    engine: str
    listeners: int
    missed_by_listeners: int
    missed_by_engine: bool
    missed_by: str  # both, listeners, engine or neither


@dataclass(frozen=True, kw_only=True)
class Misses:
    """Per system and engine, the rated words by who missed them (misses.csv), each share of the words with a 95%
    CI from a bootstrap over sentences: the voice or the text (both), the listeners alone, the engine alone."""
    system: str
    engine: str
    words: int
    both: int
    listeners_only: int
    engine_only: int
    both_share: float | None
    both_ci95_low: float | None
    both_ci95_high: float | None
    listeners_only_share: float | None
    listeners_only_ci95_low: float | None
    listeners_only_ci95_high: float | None
    engine_only_share: float | None
    engine_only_ci95_low: float | None
    engine_only_ci95_high: float | None


@dataclass(frozen=True, kw_only=True)
class Ranking:
    """Whether an engine orders the systems by WER as their listeners do (rankings.csv)."""
    engine: str
    listeners: list[str] = joined(sep=" < ")  # the systems, fewest listeners' errors first (micro, strict)
    by_engine: list[str] = joined(sep=" < ")  # the same systems, fewest engine errors first
    same: bool


def spoken(clip: dict) -> str:
    """The language of a test clip's sentence: the test's (English for a test made before tests had one)."""
    return clip.get("language") or typed.ENGLISH


def score_clip(clip: dict, text: str) -> typed.Scored:
    """An answer or an engine's transcript of the clip, against its sentence in its language."""
    return typed.score(clip["reference"], text, spoken(clip))


def missed(s: typed.Scored) -> list[bool]:
    """Each word of the sentence: not heard as it is (deleted or substituted), by the strict alignment."""
    return [op is not Op.HIT for op, r, _ in s.strict.ops if r is not None]


def _share(counts: np.ndarray, words: np.ndarray, n_boot: int, seed: int) -> tuple:
    """counts / words over the sentences (arrays by sentence), with a bootstrap over sentences."""
    if not words.sum():
        return None, None, None
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(words), (n_boot, len(words)))
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = counts[draws].sum(axis=1) / words[draws].sum(axis=1)
    return (_rounded(counts.sum() / words.sum()), *analysis.interval(shares))


def misses(system: str, engine: str, rated: list[str], clips: dict, answers: dict[str, list[typed.Scored]],
           n_boot: int, seed: int) -> tuple[list[WordHeard], Misses]:
    """Each rated word of a system's clips, heard by the listeners and by one engine."""
    words, per_sentence = [], []
    for cid in rated:
        clip = clips[cid]
        machine = missed(score_clip(clip, clip["heard"][engine]))
        people = np.sum([missed(s) for s in answers[cid]], axis=0)
        counts = [0, 0, 0]
        for k, (word, by_engine) in enumerate(zip(typed.words(clip["reference"], spoken(clip)), machine)):
            by_people = people[k] > len(answers[cid]) / 2
            who = ("both" if by_engine else "listeners") if by_people else "engine" if by_engine else "neither"
            if who != "neither":
                counts[("both", "listeners", "engine").index(who)] += 1
            words.append(WordHeard(system=system, sentence=clip["sentence"], position=k + 1, word=word,
                                   engine=engine, listeners=len(answers[cid]), missed_by_listeners=int(people[k]),
                                   missed_by_engine=by_engine, missed_by=who))
        per_sentence.append((*counts, len(machine)))
    table = np.array(per_sentence, dtype=float).reshape(-1, 4)
    figures = {}
    for k, name in enumerate(("both", "listeners_only", "engine_only")):
        figures[f"{name}_share"], figures[f"{name}_ci95_low"], figures[f"{name}_ci95_high"] = \
            _share(table[:, k], table[:, 3], n_boot, seed)
    return words, Misses(system=system, engine=engine, words=int(table[:, 3].sum()), both=int(table[:, 0].sum()),
                         listeners_only=int(table[:, 1].sum()), engine_only=int(table[:, 2].sum()), **figures)


PREDICTABLE = "predictable"


@dataclass(frozen=True, kw_only=True)
class Context:
    """How much context helps (context.csv): a system's strict micro WER on a set of sentences (unpredictable, or
    the shuffled control) minus on the predictable set, by its listeners or an engine, with a 95% CI from the
    listeners × sentences bootstrap (the same draws for every row of a system); for an engine, also its effect
    minus the listeners' (`beyond_listeners`: above 0, the engine leans on context more than people do)."""
    system: str
    by: str  # listeners, or the engine
    set: str
    perplexity: float | None  # the runs' LM's mean perplexity of the set's sentences
    perplexity_predictable: float | None
    wer: float | None  # on the set
    wer_predictable: float | None
    effect: float | None  # wer − wer_predictable
    effect_ci95_low: float | None
    effect_ci95_high: float | None
    beyond_listeners: float | None = None
    beyond_ci95_low: float | None = None
    beyond_ci95_high: float | None = None


def context(system: str, scored: list[tuple[str, str, typed.Scored]], machines: dict[str, list[tuple[str, str,
            typed.Scored]]], sets: dict[str, str], perplexity: dict[str, float | None], n_boot: int,
            seed: int) -> list[Context]:
    """The context rows of one system: `scored` its listeners' answers and `machines` each engine's transcripts,
    each (who, sentence, its scoring); `sets` each sentence's set."""
    named = sorted({sets.get(sentence, "") for _, sentence, _ in scored} - {"", PREDICTABLE})
    if PREDICTABLE not in sets.values() or not named:
        return []
    listeners, _ = analysis.index([who for who, _, _ in scored])
    items, sentences = analysis.index([sentence for _, sentence, _ in scored])
    wl, wi = resampled_counts(listeners.max() + 1, len(sentences), n_boot, seed)
    at = {sentence: k for k, sentence in enumerate(sentences)}

    def rates(rows: list[tuple[str, str, typed.Scored]], weights: np.ndarray, which: str) -> tuple:
        mine = [(k, s) for k, (_, sentence, s) in enumerate(rows) if sets.get(sentence) == which]
        errors = np.array([s.strict.errors for _, s in mine], dtype=float)
        words = np.array([s.strict.ref_words for _, s in mine], dtype=float)
        w = weights[:, [k for k, _ in mine]]
        with np.errstate(invalid="ignore", divide="ignore"):
            return (errors.sum() / words.sum() if words.sum() else np.nan), (w * errors).sum(1) / (w * words).sum(1)

    people_w = wl[:, listeners] * wi[:, items]
    mean_ppl = {name: _rounded(np.mean(v)) if (v := [perplexity[s] for s in sentences if sets.get(s) == name
                                                     and perplexity.get(s) is not None]) else None
                for name in (PREDICTABLE, *named)}
    out = []
    for name in named:
        base, base_draws = rates(scored, people_w, PREDICTABLE)
        value, draws = rates(scored, people_w, name)
        people_effect = draws - base_draws
        out.append(Context(system=system, by=LISTENERS, set=name, perplexity=mean_ppl[name],
                           perplexity_predictable=mean_ppl[PREDICTABLE], wer=_rounded(value),
                           wer_predictable=_rounded(base), effect=_rounded(value - base),
                           **dict(zip(("effect_ci95_low", "effect_ci95_high"), analysis.interval(people_effect)))))
        for engine, rows in sorted(machines.items()):
            engine_w = wi[:, [at[sentence] for _, sentence, _ in rows]]
            e_base, e_base_draws = rates(rows, engine_w, PREDICTABLE)
            e_value, e_draws = rates(rows, engine_w, name)
            effect = e_draws - e_base_draws
            beyond = _rounded((e_value - e_base) - (value - base))
            out.append(Context(system=system, by=engine, set=name, perplexity=mean_ppl[name],
                               perplexity_predictable=mean_ppl[PREDICTABLE], wer=_rounded(e_value),
                               wer_predictable=_rounded(e_base), effect=_rounded(e_value - e_base),
                               **dict(zip(("effect_ci95_low", "effect_ci95_high"), analysis.interval(effect))),
                               beyond_listeners=beyond,
                               **dict(zip(("beyond_ci95_low", "beyond_ci95_high"),
                                          analysis.interval(effect - people_effect)))))
    return out


@dataclass(frozen=True, kw_only=True)
class Slope:
    """How word errors rise with the LM's surprisal (slopes.csv): the least-squares slope of a word missed (1) or
    heard (0) on its surprisal in bits, over a system's listeners' words or one engine's, with a 95% CI from the
    listeners × sentences bootstrap; for an engine, also its slope minus the listeners' on the same draws (above
    0: its errors follow the LM's surprise more than people's do)."""
    system: str
    by: str
    words: int  # words with a surprisal (each listener's each word, for the listeners)
    slope: float | None  # errors a word per bit
    ci95_low: float | None
    ci95_high: float | None
    beyond_listeners: float | None = None
    beyond_ci95_low: float | None = None
    beyond_ci95_high: float | None = None


def _slopes(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The weighted least-squares slope of y on x under each row of weights."""
    with np.errstate(invalid="ignore", divide="ignore"):
        total = weights.sum(axis=1)
        mx, my = weights @ x / total, weights @ y / total
        return (weights @ (x * y) / total - mx * my) / (weights @ (x * x) / total - mx * mx)


def slopes(system: str, rated: list[str], clips: dict, answers: dict[str, list[tuple[str, typed.Scored]]],
           engines: list[str], n_boot: int, seed: int) -> list[Slope]:
    """The slope rows of one system: `answers` each rated clip's (listener, scoring)."""
    with_bits = [c for c in rated if clips[c]["surprisal"]]
    if not with_bits:
        return []
    listeners, names = analysis.index([who for c in with_bits for who, _ in answers[c]])
    at = {who: k for k, who in enumerate(names)}
    wl, wi = resampled_counts(len(names), len(with_bits), n_boot, seed)
    x, y, who, item = [], [], [], []
    for k, c in enumerate(with_bits):
        for name, s in answers[c]:
            for bits, miss in zip(clips[c]["surprisal"], missed(s)):
                x.append(bits), y.append(float(miss)), who.append(at[name]), item.append(k)
    x, y = np.array(x), np.array(y)
    people = _slopes(x, y, wl[:, who] * wi[:, item])
    point = _slopes(x, y, np.ones((1, len(x))))[0]
    out = [Slope(system=system, by=LISTENERS, words=len(x), slope=_rounded(point),
                 **dict(zip(("ci95_low", "ci95_high"), analysis.interval(people))))]
    for engine in engines:
        ex, ey, eitem = [], [], []
        for k, c in enumerate(with_bits):
            if engine in clips[c]["heard"]:
                found = missed(score_clip(clips[c], clips[c]["heard"][engine]))
                ex += clips[c]["surprisal"]
                ey += [float(m) for m in found]
                eitem += [k] * len(found)
        if not ex:
            continue
        ex, ey = np.array(ex), np.array(ey)
        machine = _slopes(ex, ey, wi[:, eitem])
        value = _slopes(ex, ey, np.ones((1, len(ex))))[0]
        out.append(Slope(system=system, by=engine, words=len(ex), slope=_rounded(value),
                         **dict(zip(("ci95_low", "ci95_high"), analysis.interval(machine))),
                         beyond_listeners=_rounded(value - point),
                         **dict(zip(("beyond_ci95_low", "beyond_ci95_high"), analysis.interval(machine - people)))))
    return out


def _rounded(x) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), 4)


def heard(system: str, by: str, scored: list[tuple[str, str, typed.Scored]], n_boot: int, seed: int,
          unit: str = language.WORD) -> Heard:
    """The figures of `scored`, each (listener, sentence, its scoring), in `unit`."""
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
    return Heard(system=system, by=by, answers=len(scored), words=int(words.sum()), **figures, unit=unit)


def shown(s: typed.Scored) -> str:
    return " ".join(r if op is Op.HIT else f"{r}→{h}" if op is Op.SUBSTITUTION else f"-{r}" if op is Op.DELETION
                    else f"+{h}" for op, r, h in s.strict.ops)


@dataclass(frozen=True, kw_only=True)
class Transcription(Kind):
    widget: ClassVar[str] = "text"
    plays: ClassVar[int] = 1  # as Blizzard plays a sentence: once
    varies: ClassVar[bool] = False  # a listener who gets every word right has listened
    agreement: ClassVar[str] = "nominal, each word heard or missed"
    each_sentence_once: ClassVar[bool] = True  # a sentence typed once is typed the second time from memory

    @property
    def instructions(self) -> str:
        return ("Listen to the recording to its end, then type the words you heard, as you heard them, and press "
                "Enter. Guess a word you are unsure of; if you heard none, type -.")

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
        if not maker.language:
            runs = ", ".join(f"{run} in {lang}" for run, lang in sorted(maker.languages.items()))
            raise InputError(f"a transcription test scores every answer in its runs' one language, and these are in "
                             f"several ({runs}): make a test for each language")
        typed.require(maker.language)
        if not typed.english(maker.language) and not maker.options.gold and not self.known(maker):
            raise InputError(f"a transcription test in {maker.language} needs a gold trial in {maker.language}, and "
                             f"the runs have no natural recording whose words are known: give --gold GOLD.csv "
                             f"(columns audio,expected: a clear recording in {maker.language} and its words); the "
                             "tool's own gold is English")
        for (_, sentence), cid in maker.rated.items():
            maker.trial("test", cid, None, sentence)

    def own_clips(self, maker: Maker) -> list:
        """The tool's own voice reading sentences of its own: a training or trapping clip cut from a tested
        sentence would let a listener hear that sentence before its trial, and type it from memory."""
        from pipeline.listen.create import Clip
        from pipeline.tts import base as tts

        voice = tts.load("piper:joe")
        return [Clip("own", "", "", "", "", f"practice-{n}", "", text, {}, *voice.synthesize(text))
                for n, text in enumerate(PRACTICE, 1)]

    def gold_trials(self, maker: Maker) -> list[str]:
        """The user's gold recordings (`--gold`: audio and the text it says), else a natural recording whose words
        are known, else the tool's own clean voice reading a plain sentence. No gold in heavy noise: no careful
        listener gets its words. The tool's voice and its own trials are English: a test of runs in another
        language has its gold in that language (test_trials refuses one that cannot), and says that its practice
        trials are English and its traps ask for numbers."""
        foreign = [] if typed.english(maker.language) else [
            f"the practice trials are in English (the tool's own voice, piper:joe), and the test in "
            f"{maker.language}; a trap asks in English for a number, which any keyboard types as a digit"]
        if maker.options.gold:
            user_gold(maker)
            return foreign
        said = self.known(maker)
        if said:
            maker.trial("gold", maker.put(maker.variant(said[0], "gold", None)), None, said[0].sentence_id,
                        said[0].reference_text)
            return foreign
        from pipeline.tts import base as tts

        samples, sr = tts.load("piper:joe").synthesize(CLEAR)
        maker.trial("gold", maker.put(made("gold", next(maker.pick), samples, sr)), None, "clear", CLEAR)
        return ["the gold trial is the tool's own voice (piper:joe) reading a plain sentence: the runs have no "
                "natural recording whose words are known, and no --gold was given"]

    @staticmethod
    def known(maker: Maker) -> list:
        """The runs' natural recordings whose words are known (a speaker reference's own words are not)."""
        return [n for n in maker.naturals if n.reference_text]

    def gold_answer(self, text: str) -> str:
        if not text.strip():
            raise ValueError("an empty expected text")
        return unicodedata.normalize("NFC", text)

    def trap(self, rng, language: str) -> tuple[str, str]:
        if typed.english(language):
            word = rng.choice(TRAP_WORDS)
            return word, f"Please type the word {word}."
        digit = rng.choice(TRAP_DIGITS)
        return str(digit), f"Please type the number {typed.SMALL[digit]}."

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
        """The trap's word among the answer's; a number's as its digit, its English word or its numeral."""
        if not isinstance(vote.raw, str):
            return False
        said, asked = typed.words(vote.raw, vote.language), str(vote.expected)
        digit = int(asked) if len(asked) == 1 and asked.isdecimal() else None
        forms = [asked] if digit is None else [asked, typed.SMALL[digit], NUMERALS[digit]]
        return any(form in said for form in forms)

    @property
    def gold_rule(self) -> str:
        return f"with more than {GOLD_WER:.0%} of the words missed (the tolerant rate)"

    def gold_missed(self, vote: analysis.Vote) -> bool:
        """A homophone, an obvious misspelling or kana for kanji is a word heard: only the tolerant rate tells a
        careless listener from one who types a Japanese gold in kana."""
        found = typed.score(str(vote.expected), str(vote.value), vote.language)
        return found.tolerant_wer is not None and found.tolerant_wer > GOLD_WER

    def analyse(self, result: analysis.Analysis, kept: list[analysis.Vote], clips: dict, n_boot: int,
                seed: int) -> None:
        answers, by_system = [], defaultdict(list)
        per_clip: dict[str, list[typed.Scored]] = defaultdict(list)
        named: dict[str, list[tuple[str, typed.Scored]]] = defaultdict(list)
        for v in kept:
            clip = clips[v.first]
            s = score_clip(clip, str(v.value))
            by_system[clip["system"]].append((v.name, v.sentence, s))
            per_clip[v.first].append(s)
            named[v.first].append((v.name, s))
            answers.append(Answer(listener=v.name, system=clip["system"], sentence=v.sentence,
                                  reference=clip["reference"], typed=str(v.value), words=s.strict.ref_words,
                                  errors=s.strict.errors, tolerant_errors=s.tolerant_errors, alignment=shown(s),
                                  forgiven=[f"{f.reference}→{f.typed} ({f.rule})" for f in s.rules]))
        rows, words, missing, effects, rises, curves = [], [], [], [], [], []
        sets = {c["sentence"]: c["set"] for c in clips.values()}
        perplexity = {c["sentence"]: c["perplexity"] for c in clips.values()}
        # each engine's transcript of each rated clip, scored once for every table that sets it beside the people
        by_engine = {(c, e): score_clip(clips[c], text) for c in per_clip
                     for e, text in clips[c]["heard"].items()}
        unit = language.unit(spoken(next(iter(clips.values())))) if clips else language.WORD
        for system, scored in sorted(by_system.items()):
            rows.append(heard(system, LISTENERS, scored, n_boot, seed, unit))
            rated = sorted(c for c in per_clip if clips[c]["system"] == system)
            machines = {}
            for engine in sorted({e for c in rated for e in clips[c]["heard"]}):
                on = [c for c in rated if engine in clips[c]["heard"]]
                machines[engine] = [(engine, clips[c]["sentence"], by_engine[c, engine]) for c in on]
                rows.append(heard(system, engine, machines[engine], n_boot, seed, unit))
                listed, counted = misses(system, engine, on, clips, per_clip, n_boot, seed)
                words += listed
                missing.append(counted)
            effects += context(system, scored, machines, sets, perplexity, n_boot, seed)
            rises += slopes(system, rated, clips, named, sorted(machines), n_boot, seed)
        for voiced in sorted({clips[c]["voiced"] for c in per_clip}):
            own = [c for c in per_clip if clips[c]["voiced"] == voiced]
            curves.append(noise.breakdown(voiced, LISTENERS, [
                noise.Counted(name, clips[c]["sentence"], clips[c]["condition"], s.strict.errors, s.strict.ref_words)
                for c in own for name, s in named[c]], n_boot, seed))
            for engine in sorted({e for c in own for e in clips[c]["heard"]}):
                curves.append(noise.breakdown(voiced, engine, [
                    noise.Counted(engine, clips[c]["sentence"], clips[c]["condition"], found.errors, found.ref_words)
                    for c in own if engine in clips[c]["heard"] for found in [by_engine[c, engine].strict]],
                    n_boot, seed))
        # the listeners' agreement on which words they got: each word of each clip a unit, each listener's hit
        # (1) or miss (0) its value; interval alpha on 0 and 1 is nominal alpha
        result.alpha = analysis.krippendorff_interval(
            [[0.0 if m else 1.0 for m in column] for found in per_clip.values()
             for column in zip(*(missed(s) for s in found))])
        # each clip's listeners' mean WER beside each engine's: the agreement and the plot every kind has
        result.clips = [analysis.ClipScore(
            clip=c, system=clips[c]["system"], run=clips[c]["run"], voice=clips[c]["voice"],
            sentence=clips[c]["sentence"], utterance_id=clips[c]["utterance_id"], votes=len(found),
            mean=round(float(np.mean([s.strict.wer or 0.0 for s in found])), 4),
            measures={e: by_engine[c, e].strict.wer for e in sorted(clips[c]["heard"])},
            run_folder=clips[c]["run_folder"], source_sha256=clips[c]["source_sha256"])
            for c, found in sorted(per_clip.items())]
        engines = sorted({e for c in result.clips for e in c.measures})
        fits = []
        for engine in engines:
            result.agreements += analysis.agreements(result.clips, engine, n_boot, seed)
            # the listeners' WER of a clip from the engine's: kept apart from calibration.json, which puts
            # measures on a rating scale in a run, and which an engine's WER is not
            fit = analysis.calibration(result.clips, engine, result.test, self, n_boot, seed, scale=(0.0, 1.0))
            if fit is not None:
                fits.append(fit)
        people = {h.system: h.micro_wer for h in rows if h.by == LISTENERS and h.micro_wer is not None}
        rankings = []
        for engine in engines:
            machine = {h.system: h.micro_wer for h in rows if h.by == engine and h.micro_wer is not None}
            if len(people) >= 2 and set(machine) == set(people):
                order, theirs = sorted(people, key=people.get), sorted(machine, key=machine.get)
                rankings.append(Ranking(engine=engine, listeners=order, by_engine=theirs, same=order == theirs))
        result.tables = {"heard": rows, "rankings": rankings, "from_engines": fits, "context": effects,
                         "slopes": rises, "breakdown": [b for b in curves if b is not None], "misses": missing,
                         "words": words,
                         "answers": sorted(answers, key=lambda a: (a.system, a.sentence, a.listener))}

    def human(self, test: str, kept: list[analysis.Vote], origin, clips: dict):
        """Each rated sentence's listeners' WER (strict: the mean of its answers'), by where its clip came from."""
        from pipeline.gate.release import Human

        per_clip: dict[str, list[float]] = defaultdict(list)
        for v in kept:
            found = score_clip(clips[v.first], str(v.value)).strict
            if found.wer is not None:
                per_clip[v.first].append(found.wer)
        means: dict[tuple[str, str, str], dict[str, float]] = defaultdict(dict)
        for cid, rates in per_clip.items():
            where = origin(cid)
            if where:
                means[where][clips[cid]["sentence"]] = float(np.mean(rates))
        return Human(metric=self.metric, test=test, means=dict(means), scale=(0.0, 1.0),
                     per_sentence="each sentence's listeners' WER (the mean of its answers')") if means else None

    def lines(self, found: analysis.Analysis) -> list[str]:
        rows = found.tables.get("heard", [])
        unit = rows[0].unit if rows else language.WORD
        rate = language.RATE[unit]
        out = [f"{'system':<24} {'heard by':<28} {'answers':>7}  {rate} strict [95% CI]       tolerant [95% CI]"]
        for h in rows:
            out.append(f"{h.system:<24} {h.by:<28} {h.answers:>7}  "
                       f"{ci_text(h.micro_wer, h.micro_ci95_low, h.micro_ci95_high):<24}  "
                       f"{ci_text(h.tolerant_micro_wer, h.tolerant_micro_ci95_low, h.tolerant_micro_ci95_high)}")
        for r in found.tables.get("rankings", []):
            out.append(f"{r.engine} {'ranks the systems as the listeners do' if r.same else 'ranks them otherwise'}:"
                       f" {' < '.join(r.by_engine)} (listeners: {' < '.join(r.listeners)}; fewest errors first)")
        for f in found.tables.get("from_engines", []):
            out.append(f"listeners' {rate} of a clip ≈ {f.intercept:+.3f} + {f.slope:.3f} × {f.measure}'s (residual "
                       f"SD {f.residual_sd:.3f}, for its {rate} in [{f.low:g}, {f.high:g}], {f.clips} clips)")
        for c in found.tables.get("context", []):
            beyond = "" if c.beyond_listeners is None else (
                f"; {ci_text(c.beyond_listeners, c.beyond_ci95_low, c.beyond_ci95_high)} beyond the listeners'")
            out.append(f"{c.system}, {c.by}: {rate} {c.set} minus predictable "
                       f"{ci_text(c.effect, c.effect_ci95_low, c.effect_ci95_high)}{beyond}")
        for r in found.tables.get("slopes", []):
            beyond = "" if r.beyond_listeners is None else (
                f"; {ci_text(r.beyond_listeners, r.beyond_ci95_low, r.beyond_ci95_high)} beyond the listeners'")
            out.append(f"{r.system}, {r.by}: word errors per bit of LM surprisal "
                       f"{ci_text(r.slope, r.ci95_low, r.ci95_high)}{beyond}")
        for b in found.tables.get("breakdown", []):
            snr = "not reached" if b.breakdown_snr is None else \
                f"{ci_text(b.breakdown_snr, b.ci95_low, b.ci95_high)} dB"
            out.append(f"{b.system}, {b.by}: {rate} clean {b.clean_wer}, " + ", ".join(f"{p.snr:g} dB {p.wer:.4f}"
                                                                                 for p in b.curve) +
                       f"; breakdown SNR ({rate} ≥ {b.threshold}) {snr}")
        for m in found.tables.get("misses", []):
            out.append(f"{m.system}, {m.engine}: of {m.words} {unit}s, missed by both {m.both}, by the listeners "
                       f"alone {m.listeners_only}, by the engine alone {m.engine_only} (words.csv lists them)")
        return out if rows else []


KINDS.register(Transcription(
    name="transcribe", summary="listeners type what they hear, scored as WER beside each engine's",
    title="Type the words you heard", scale=()))
