"""The rows the stages pass on, as typed records, and the one CSV reader and writer for all of them.

A field's name is its CSV column and the order of fields is the order of columns (new ones go at the end);
a column's meaning is the comment beside its field. Empty cells are None."""
from __future__ import annotations

import dataclasses
import functools
import operator
import typing
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Callable, Iterable, TypeVar

from pipeline.core import store

R = TypeVar("R")
Group = tuple[str, str, str]  # (voice, asr, condition): what a corpus figure is computed over
SPOKEN = ("ok", "skipped", "error")  # skipped: nothing a voice could say; error: the reason is in `error`


def trn_safe(text: str) -> str:
    """A part of an id: a space would end a trn id, and an underscore inside a part would hide where the system
    ends and the sentence begins. (sclite's `-i spu_id` takes the speaker as the id up to its first hyphen, else
    its first underscore.)"""
    return text.replace("_", "-").replace(" ", "-")


def utterance_id(*, sentence_id: str, voice: str = "", condition: str = "", asr: str = "") -> str:
    """A row's one name, built one way from what the row is (its sentence, and its voice, condition and engine where
    it has them), as lhotse names a cut: the same in every CSV, trn and pralign file, the report's anchors and
    every join. An utterance is <voice>-<condition>-<asr>_<sentence_id>
    (`piper-joe-clean-faster-whisper-base_s0-1`), a speech row, which no engine has heard yet,
    <voice>-<condition>_<sentence_id>. Without a system (a transcript scored by `run_pipeline.py score`) it is the
    id the user gave, spaces aside, so that it joins with the user's own files. Manifests refuse ids that would
    share a name (io/manifests/base.py)."""
    system = "-".join(p for p in (voice, condition, asr) if p).replace(":", "-").replace("=", "")
    if not system:
        return sentence_id.replace(" ", "-")
    return f"{trn_safe(system)}_{trn_safe(sentence_id)}"


class _Spoken:
    """A record of one speech row: one sentence in one voice and condition."""
    __slots__ = ()

    @property
    def speech_id(self) -> str:
        return utterance_id(sentence_id=self.sentence_id, voice=self.voice, condition=self.condition)


def columns_of(kind: type = float):
    """A field that is a dict of columns of one kind, written where the field is declared, one column per key (a
    measure's columns: which exist depends on the measures a run selected; a WER per normalizer; a count per health
    flag), so that a new key is a new column without a new field."""
    return dataclasses.field(default_factory=dict, metadata={"columns": kind})


def lm_only(default=None):
    """A field only a trained LM fills: a table in which every row holds its default (a run of recordings or
    sentences without an LM) leaves the column out, and reading it back gives the default."""
    return dataclasses.field(default=default, metadata={"lm_only": True})


class Codec(typing.NamedTuple):
    """How a field that holds several values is one CSV cell."""
    read: Callable[[str], object]  # one item from its text
    write: Callable[[object], str]  # one item's text
    sep: str
    kind: type  # list or tuple


def joined(kind: Callable[[str], object] = str, form: str = "{}", lm: bool = False):
    """A list, held as a list until the CSV writer joins it into one `;`-separated cell (each item written as
    `form` gives it) and read back item by item with `kind`; `lm`: only a trained LM fills it (lm_only)."""
    return dataclasses.field(default_factory=list, metadata={"joined": Codec(kind, form.format, ";", list),
                                                             "lm_only": lm})


GROUP = Codec(lambda text: "" if text == "-" else text, lambda name: name or "-", " | ", tuple)


def grouped():
    """A group's names (a Group: voice, engine, condition; or some of them), a tuple until the CSV writer writes it
    `piper:joe | faster-whisper:base | clean`, an empty name as `-`."""
    return dataclasses.field(metadata={"joined": GROUP})


def label(group: tuple[str, ...]) -> str:
    """A group as its cell, its JSON and the report name it."""
    return _cell(group, GROUP)


class _Grouped:
    """A record of one (voice, asr, condition) group, or of one of its utterances."""
    __slots__ = ()

    @property
    def group(self) -> Group:
        return self.voice, self.asr, self.condition


class Op(str, Enum):
    """An edit operation of an alignment, spelled once: its letter (sclite's pralign, the ops of an Alignment) and
    its word (`errors.csv`'s type: substitution, deletion, insertion)."""
    HIT = "H"
    SUBSTITUTION = "S"
    DELETION = "D"
    INSERTION = "I"

    @property
    def word(self) -> str:
        return self.name.lower()

    @classmethod
    def named(cls, word: str) -> Op:
        return cls[word.upper()]


ERRORS = tuple(op.word for op in Op if op is not Op.HIT)


def _one_of(value: str, allowed: tuple[str, ...], what: str) -> None:
    if value not in allowed:
        raise ValueError(f"{what} = {value!r}; expected one of {', '.join(allowed)}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Sentence:
    sentence_id: str  # stable across reruns: s<sample>-<n> (LM), l<line> (a sentences file), or the manifest id
    sample: int | None  # which LM sample it was cut from
    text: str  # the reference, as written
    lm_tokens: int  # GPT-2 tokens in the text
    perplexity: float | None = lm_only()  # the LM's perplexity of the text, given the sampling prompt
    word_surprisal: list[float] = joined(float, "{:.4f}", lm=True)  # each word of text.split(): its tokens'
    # −log₂ p summed (bits, 4 decimals), given the prompt and the text before it (lm/surprisal.py)


@dataclass(frozen=True, slots=True, kw_only=True)
class Speech(_Spoken):
    sentence_id: str
    voice: str  # family:voice; "" for recordings from an audio manifest
    condition: str  # clean, noise:snr=<dB>, speed:<factor>, silence
    audio_path: str  # the wav to hear; "" when nothing was made
    audio_seconds: float | None
    tts_seconds: float | None  # wall time of synthesis
    status: str
    error: str
    speaker_reference: str = ""  # the audio this row's voice should sound like (a voice-cloning prompt), if given

    def __post_init__(self):
        _one_of(self.status, SPOKEN, "status")

    @property
    def id(self) -> str:
        return self.speech_id


@dataclass(frozen=True, slots=True, kw_only=True)
class Transcript(_Grouped, _Spoken):
    sentence_id: str
    voice: str
    condition: str
    asr: str  # engine:model
    audio_path: str
    audio_seconds: float | None  # length of the audio heard
    tts_seconds: float | None
    hypothesis: str  # what the engine wrote, as written
    asr_seconds: float | None  # wall time of this utterance's decode
    status: str
    error: str
    audio_sha256: str  # of the audio heard: the transcript's cache key starts from it
    level_dbfs: float | None  # loudest 30 ms frame of the audio heard

    def __post_init__(self):
        _one_of(self.status, SPOKEN, "status")

    @property
    def id(self) -> str:
        return utterance_id(sentence_id=self.sentence_id, voice=self.voice, condition=self.condition, asr=self.asr)


@dataclass(frozen=True, slots=True, kw_only=True)
class Pair(_Grouped):
    """What scoring reads: a reference and the hypothesis an engine wrote for it, with what is known of its audio
    and text. Only sentence_id, reference and hypothesis are needed (`run_pipeline.py score` knows no more)."""
    sentence_id: str
    reference: str
    hypothesis: str
    voice: str = ""
    asr: str = ""
    condition: str = ""
    status: str = "ok"
    error: str = ""
    audio_path: str = ""
    audio_seconds: float | None = None
    tts_seconds: float | None = None
    asr_seconds: float | None = None
    level_dbfs: float | None = None
    audio_sha256: str = ""
    perplexity: float | None = None
    lm_tokens: int | None = None
    word_surprisal: tuple[float, ...] = ()  # one per word of reference.split(), as Sentence.word_surprisal
    measures: dict[str, float | None] = dataclasses.field(default_factory=dict)
    speaker_reference: str = ""

    def __post_init__(self):
        _one_of(self.status, SPOKEN, "status")

    @classmethod
    def heard(cls, t: Transcript, s: Sentence | None, measures: dict[str, float | None], audio_path: str,
              speaker_reference: str = "") -> Pair:
        """A transcript beside its sentence (None: a sentence the run no longer has, scored against nothing), its
        audio and its speaker reference named as the scores name them."""
        return cls(sentence_id=t.sentence_id, reference=s.text if s else "", hypothesis=t.hypothesis, voice=t.voice,
                   asr=t.asr, condition=t.condition, status=t.status, error=t.error, audio_path=audio_path,
                   audio_seconds=t.audio_seconds, tts_seconds=t.tts_seconds, asr_seconds=t.asr_seconds,
                   level_dbfs=t.level_dbfs, audio_sha256=t.audio_sha256, perplexity=s.perplexity if s else None,
                   lm_tokens=s.lm_tokens if s else None, word_surprisal=tuple(s.word_surprisal) if s else (),
                   measures=measures, speaker_reference=speaker_reference)


@dataclass(slots=True, kw_only=True)  # not frozen: 100,000 of them are made at once, and a frozen init costs a call per field
class ScoredUtterance(_Grouped):
    id: str  # utterance_id(): <voice>-<condition>-<asr>_<sentence_id>, as in the trn files
    sentence_id: str
    voice: str
    asr: str
    condition: str
    reference: str
    hypothesis: str
    reference_normalized: str
    hypothesis_normalized: str
    ref_words: int | None  # words in the normalized reference
    hits: int | None
    substitutions: int | None
    deletions: int | None
    insertions: int | None
    errors: int | None  # substitutions + deletions + insertions
    wer: float | None  # errors / ref_words; None when the reference is empty
    perplexity: float | None = lm_only()
    lm_tokens: int | None
    audio_path: str  # the audio heard: relative to the run folder (open Path(run_folder) / audio_path), or absolute
    # for audio outside the folder the run was started from
    audio_seconds: float | None
    tts_seconds: float | None
    asr_seconds: float | None
    status: str  # ok, skipped, error, or empty_reference (left out of corpus WER)
    error: str
    flags: list[str] = joined()  # health flags (scoring/flags.py)
    level_dbfs: float | None
    audio_sha256: str
    ref_chars: int | None  # characters in the normalized reference, spaces included
    char_errors: int | None  # character edit distance to the normalized hypothesis (jiwer)
    cer: float | None  # char_errors / ref_chars
    word_surprisal: list[float] = joined(float, "{:.4f}", lm=True)  # each normalized reference word's surprisal
    # (bits): that of the written word it came from (a word the normalizer splits gives each part the whole)
    speaker_reference: str = ""  # the audio this row's voice should sound like (a voice-cloning prompt), named as
    # audio_path is; empty when the row has none
    measures: dict[str, float | None] = columns_of()  # each measure's columns (dnsmos_ovrl, speaker_sim, …):
    # their meanings are in the measure's file (pipeline/measures/) and in measures.json

    def __post_init__(self):
        _one_of(self.status, (*SPOKEN, "empty_reference"), "status")
        if self.wer is not None and self.wer < 0:
            raise ValueError(f"wer = {self.wer} is negative")


@dataclass(slots=True, kw_only=True)  # not frozen, as ScoredUtterance
class ErrorEvent:
    id: str  # the utterance
    type: str  # substitution, deletion or insertion
    reference_word: str
    hypothesis_word: str
    position: int  # index in the utterance's alignment, hits included
    surprisal: float | None = lm_only()  # the reference word's surprisal (bits); None for an insertion

    def __post_init__(self):
        _one_of(self.type, ERRORS, "type")


@dataclass(frozen=True, slots=True, kw_only=True)
class Confusion(_Grouped):
    voice: str
    asr: str
    condition: str
    reference_word: str
    hypothesis_word: str
    count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupSummary(_Grouped):
    voice: str
    asr: str
    condition: str
    normalizer: str
    n_utterances: int  # rows scored
    n_excluded: int  # rows not scored: failed synthesis or transcription, empty reference
    ref_words: int
    errors: int
    micro_wer: float | None  # Σ errors / Σ reference words, as sclite
    macro_wer: float | None  # mean of per-utterance WER
    ci95_low: float | None  # bootstrap 95% interval of micro_wer, resampling utterances
    ci95_high: float | None
    spearman_n: int = lm_only(0)
    spearman_rho: float | None = lm_only()  # rank correlation of perplexity and WER
    spearman_p: float | None = lm_only()
    flagged: int  # rows with any health flag
    flag_counts: dict[str, int] = columns_of(int)  # rows with each health flag, one column per flag
    # (scoring/flags.py NAMES: silent_audio, empty_hypothesis, repetition, runaway_insertions)
    hallucination_wpm: float | None  # silence condition only: words written per minute of no speech
    micro_cer: float | None  # Σ character errors / Σ reference characters
    cer_ci95_low: float | None
    cer_ci95_high: float | None
    macro_ci95_low: float | None = None  # bootstrap 95% interval of macro_wer, from the same resamples
    macro_ci95_high: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Comparison:
    """Two groups (voice × engine × condition) scored on the same sentences: B against A."""
    a: Group = grouped()  # voice | asr | condition
    b: Group = grouped()
    sentences: int  # shared sentences, both scored
    wer_a: float | None
    wer_b: float | None
    delta_wer: float | None  # wer_b − wer_a, pooled over the shared sentences
    delta_ci95_low: float | None  # paired bootstrap, resampling sentences
    delta_ci95_high: float | None
    cer_a: float | None
    cer_b: float | None
    delta_cer: float | None
    mapsswe_segments: int
    mapsswe_z: float | None  # A's errors minus B's per segment: negative when A has fewer
    mapsswe_p: float
    mapsswe_p_holm: float  # Holm-corrected within its holm_family
    sign_b_worse: int  # sentences where B's WER is higher
    sign_b_better: int
    sign_ties: int
    sign_p: float
    sign_p_holm: float
    wilcoxon_z: float | None
    wilcoxon_p: float
    wilcoxon_p_holm: float
    verdict: str  # one line, by MAPSSWE after Holm at 0.05
    differs: str  # the factors in which A and B differ: voice, asr, condition, or several joined by +
    holm_family: str  # one-factor (the family Holm corrects over) or cross-factor (outside it: corrected apart)
    detectable_delta: float | None = None  # the smallest |Δ| these sentences detect with 80% power at α 0.05 (a
    # paired t-test on the per-sentence differences; docs/statistics.md)
    sentences_needed: int | None = None  # sentences it would take to detect the observed Δ so; empty when Δ is 0


@dataclass(frozen=True, slots=True, kw_only=True)
class NormalizerEffect(_Grouped):
    voice: str
    asr: str
    condition: str
    wer: dict[str, float | None] = columns_of()  # wer_<normalizer>: the same rows scored under each normalizer
    # of scoring/normalize.py (wer_none: the words as written)
    used: str  # the normalizer of this run's WER
    normalization_share: float | None  # of the errors without normalization, the share the one used removes


@dataclass(frozen=True, slots=True, kw_only=True)
class DifficultyBin(_Grouped):
    voice: str
    asr: str
    condition: str
    by: str  # perplexity (quartiles of the run's sentences), words (reference length), or surprisal (deciles of
    # the run's words: then micro_wer is the share of the bin's words substituted or deleted)
    bin: str  # e.g. "Q1 (3.1-8.4)", "6-10" or "D10 (12.1-23.4 bits)"
    n_utterances: int
    micro_wer: float | None
    ci95_low: float | None  # bootstrap over utterances
    ci95_high: float | None
    n_words: int  # reference words in the bin


@dataclass(frozen=True, slots=True, kw_only=True)
class WordAttribution:
    word: str  # a normalized reference word
    occurrences: int  # in scored utterances
    failures: int  # substituted or deleted
    failure_rate: float
    voices_failed: int  # voices in which it failed at least once
    voices_heard: int  # voices that said it
    engines_failed: int
    engines_heard: int
    points_at: str  # text, voice <name>, voice or text (every model family fails it on a voice), ASR <family>
    # (one family fails it where another heard it right), or, with one family, "one ASR family: text or ASR"
    utterances: str  # ;-separated ids of the rows where it failed
    families_failed: int  # model families (Whisper, PocketSphinx) in which it failed
    families_heard: int
    mean_surprisal: float | None = lm_only()  # bits under the LM, over its occurrences


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineAgreement:
    voice: str
    condition: str
    engines: int
    utterances: int  # sentences every engine transcribed
    agreement: float | None  # share whose normalized hypotheses are identical across the engines
    families: int  # model families among the engines
    family_agreement: float | None  # share where every family wrote one hypothesis in common; None: one family


@dataclass(frozen=True, slots=True, kw_only=True)
class Blame:
    """Voice, text or ASR? Of the reference words of one voice and condition that every ASR family heard, the share
    whose failure points one way."""
    voice: str
    condition: str
    points_at: str  # "voice or text" (every family failed the word) or "ASR <family>" (only that family did)
    words: int  # reference words every family heard (a sentence × word position)
    failures: int  # of them, the ones failed this way
    rate: float | None  # failures / words
    ci95_low: float | None  # bootstrap over sentences
    ci95_high: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class SurprisalEffect(_Grouped):
    """Does the ASR fail where the LM was surprised? One group's reference words, by surprisal and failure."""
    voice: str
    asr: str
    condition: str
    words: int  # reference words with a surprisal
    failures: int  # of them, substituted or deleted
    mean_surprisal_failed: float | None  # bits
    mean_surprisal_right: float | None
    spearman_n: int
    spearman_rho: float | None  # rank correlation of a word's surprisal and its failure (1) or not (0)
    spearman_p: float | None


class SnrWer(typing.NamedTuple):
    """A measured point of a WER-vs-SNR curve, written `snr:wer` (`10:0.3000`)."""
    snr: float  # dB
    wer: float

    def __format__(self, spec: str) -> str:
        return f"{self.snr:g}:{self.wer:.4f}"

    @classmethod
    def parse(cls, text: str) -> SnrWer:
        snr, wer = text.split(":")
        return cls(float(snr), float(wer))


@dataclass(frozen=True, slots=True, kw_only=True)
class Breakdown:
    voice: str
    asr: str
    clean_wer: float | None
    threshold: float | None  # twice the clean WER (at least 0.02)
    breakdown_snr: float | None  # SNR (dB) where WER first reaches the threshold, interpolated; None: never
    ci95_low: float | None  # bootstrap over sentences
    ci95_high: float | None
    curve: list[SnrWer] = joined(SnrWer.parse)  # the WER at each SNR measured, in the order of the conditions


@functools.cache
def _columns(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if not f.metadata.get("columns"))


@functools.cache
def _spread(cls: type) -> str | None:
    """The field of `cls` whose dict is written as columns of their own (columns_of), if any."""
    return next((f.name for f in dataclasses.fields(cls) if f.metadata.get("columns")), None)


@functools.cache
def _defaults(cls: type) -> frozenset[str]:
    """Fields a table written before they existed may lack: they have a default."""
    return frozenset(f.name for f in dataclasses.fields(cls)
                     if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING)


def columns(cls: type) -> list[str]:
    """The fixed columns; a columns_of field adds its keys after them."""
    return list(_columns(cls))


@functools.cache
def _lm_only(cls: type) -> dict[str, object]:
    return {f.name: f.default_factory() if f.default is dataclasses.MISSING else f.default
            for f in dataclasses.fields(cls) if f.metadata.get("lm_only")}


@functools.cache
def _joined(cls: type) -> dict[str, Codec]:
    return {f.name: f.metadata["joined"] for f in dataclasses.fields(cls) if f.metadata.get("joined")}


def _cell(value, codec: Codec | None):
    return codec.sep.join(codec.write(x) for x in value) if codec else value


def as_row(record) -> dict:
    """A record as its JSON twin holds it: a columns_of field's keys in its place, a group as its label, a list as
    a list."""
    spread, codecs = _spread(type(record)), _joined(type(record))
    out = {}
    for f in dataclasses.fields(record):
        value = getattr(record, f.name)
        if f.name == spread:
            out.update(value)
        elif f.name in codecs and codecs[f.name].kind is tuple:
            out[f.name] = _cell(value, codecs[f.name])
        else:
            out[f.name] = value
    return out


def write_csv(path: str | Path, cls: type, rows: Iterable) -> None:
    names, spread, optional = columns(cls), _spread(cls), _lm_only(cls)
    if optional:
        rows = list(rows)
        unused = {n for n, default in optional.items() if rows and all(getattr(r, n) == default for r in rows)}
        names = [n for n in names if n not in unused]
    lists = _joined(cls)
    if spread is None and not lists:
        values = operator.attrgetter(*names)
        store.write_rows(path, names, (values(r) if len(names) > 1 else (values(r),) for r in rows))
        return
    if spread is None:
        store.write_rows(path, names, (tuple(_cell(getattr(r, n), lists.get(n)) for n in names) for r in rows))
        return
    rows = list(rows)
    extra = list(dict.fromkeys(k for r in rows for k in getattr(r, spread)))
    at = sum(1 for f in dataclasses.fields(cls)[:[f.name for f in dataclasses.fields(cls)].index(spread)]
             if f.name in names)
    before, after = names[:at], names[at:]

    def cells(r) -> tuple:
        spread_values = getattr(r, spread)
        return (*(_cell(getattr(r, n), lists.get(n)) for n in before), *(spread_values.get(k) for k in extra),
                *(_cell(getattr(r, n), lists.get(n)) for n in after))
    store.write_rows(path, before + extra + after, (cells(r) for r in rows))


def read_csv(path: str | Path, cls: type[R]) -> list[R]:
    hints, names, spread = typing.get_type_hints(cls), columns(cls), _spread(cls)
    rows = store.read_csv(path)
    header = set(rows[0]) if rows else set()
    missing = set(names) - header - _defaults(cls) if rows else set()
    if missing:
        raise ValueError(f"{path}: not a {cls.__name__} table (no column {', '.join(sorted(missing))})")
    present = [n for n in names if n in header]
    extra = [k for k in (rows[0] if rows else ()) if k not in names] if spread else []
    kind = next(f.metadata["columns"] for f in dataclasses.fields(cls) if f.name == spread) if spread else None
    lists = _joined(cls)
    out = []
    for row in rows:
        fields = {n: _split(row[n], lists[n]) if n in lists else _parse(row[n], hints[n]) for n in present}
        if spread:
            fields[spread] = {k: None if row[k] == "" else kind(row[k]) for k in extra}
        out.append(cls(**fields))
    return out


def _split(text: str, codec: Codec):
    return codec.kind(codec.read(x) for x in text.split(codec.sep)) if text else codec.kind()


def _parse(text: str, hint) -> object:
    kinds = typing.get_args(hint) or (hint,)
    if text == "" and type(None) in kinds:
        return None
    for kind in (int, float):
        if kind in kinds:
            return kind(text)
    return text


@dataclass(frozen=True, slots=True, kw_only=True)
class Measured(_Spoken):
    """One speech row as the measures saw it (the `assess` stage's measures.csv)."""
    sentence_id: str
    voice: str
    condition: str
    audio_sha256: str  # of the audio measured: every measure's cache key starts from it
    status: str  # ok, or error when the audio could not be read (the row's transcript says so too)
    notes: list[str] = joined()  # why a value is missing (silent audio, an unreadable speaker reference), or what
    # was done to the audio (a clip under 0.5 s looped by DNSMOS)
    values: dict[str, float | None] = columns_of()  # each selected measure's columns
    speaker_reference: str = ""  # the audio the row's voice should sound like, as the run was given it

    @property
    def id(self) -> str:
        return self.speech_id  # the speech row measured: every engine's transcript of it joins here


@dataclass(frozen=True, slots=True, kw_only=True)
class MeasureSummary(_Grouped):
    """One measure column over one group's scored utterances."""
    voice: str
    asr: str
    condition: str
    measure: str  # the column: dnsmos_ovrl, speaker_sim, …
    n: int  # utterances with a value
    mean: float | None
    ci95_low: float | None  # bootstrap over sentences
    ci95_high: float | None
    p5: float | None
    median: float | None
    p95: float | None
    spearman_rho_wer: float | None  # rank correlation with the utterances' WER
    spearman_p: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class MeasureComparison:
    """Two groups on the same sentences, for one measure column: B against A."""
    a: Group = grouped()  # voice | asr | condition
    b: Group = grouped()
    measure: str
    sentences: int  # shared sentences where both have a value
    mean_a: float | None
    mean_b: float | None
    delta: float | None  # mean_b − mean_a
    delta_ci95_low: float | None  # paired bootstrap over sentences
    delta_ci95_high: float | None
    wilcoxon_z: float | None
    wilcoxon_p: float
    wilcoxon_p_holm: float  # Holm-corrected within the measure's holm_family
    verdict: str
    differs: str  # voice, condition, or both joined by + (groups that differ only in the engine heard the same audio)
    holm_family: str  # one-factor or cross-factor, as for WER
    detectable_delta: float | None = None  # the smallest |Δ| these sentences detect with 80% power at α 0.05 (a
    # paired t-test on the per-sentence differences; docs/statistics.md)
    sentences_needed: int | None = None  # sentences it would take to detect the observed Δ so; empty when Δ is 0


@dataclass(frozen=True, slots=True, kw_only=True)
class VoiceSimilarity:
    """How alike two voices sound (Resemblyzer embeddings), in one condition; a voice against itself is its
    consistency: how alike its own utterances sound."""
    condition: str
    voice_a: str
    voice_b: str
    pairs: int  # utterance pairs compared (a voice against itself: each pair of two different sentences once)
    similarity: float | None  # their mean cosine
    ci95_low: float | None  # bootstrap over sentences
    ci95_high: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Unmatched:
    """A sentence of one run that compare-runs could not pair with the other run's."""
    sentence_id: str
    group: tuple[str, str] = grouped()  # engine | condition
    reason: str  # only in <run>, the reference text differs, or not scored in <run>


@dataclass(frozen=True, slots=True, kw_only=True)
class RunComparison:
    """One metric of one matched group, run B against run A (`run_pipeline.py compare-runs`)."""
    group: tuple[str, str] = grouped()  # engine | condition
    voice_a: str
    voice_b: str
    metric: str  # wer (micro) or macro_wer, as the runs' headline; cer; or a measure column
    sentences: int  # paired sentences with a value in both runs
    a: float | None  # the metric in A over those sentences: pooled for wer and cer, the mean for a measure
    b: float | None
    delta: float | None  # b − a
    ci95_low: float | None  # paired bootstrap over sentences
    ci95_high: float | None
    test: str  # the test behind p: MAPSSWE for wer, Wilcoxon signed-rank otherwise
    p: float
    p_holm: float  # Holm-corrected over every comparison of the two runs
    mapsswe_z: float | None
    sign_b_worse: int | None  # wer only: sentences where B's WER is higher
    sign_b_better: int | None
    sign_p: float | None
    wilcoxon_z: float | None
    wilcoxon_p: float
    worse: bool  # B significantly worse (p_holm < 0.05, the CI excludes 0) by more than the margin
    margin: float  # the least change that counts against B (--margin)
    verdict: str
    detectable_delta: float | None = None  # the smallest |Δ| these sentences detect with 80% power at α 0.05 (a
    # paired t-test on the per-sentence differences; docs/statistics.md)
    sentences_needed: int | None = None  # sentences it would take to detect the observed Δ so; empty when Δ is 0
