"""What scoring reads and makes, as typed records: a Pair (a reference and the hypothesis an engine wrote for it),
a ScoredUtterance, its ErrorEvents, the Confusions and GroupSummary of each voice × engine × condition, and the
Results that hold them all (scoring/evaluate.py makes them; scoring/files.py writes them)."""
from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from dataclasses import dataclass, field
from sys import intern

from pipeline.core.records import SPOKEN, Group, Grouped, Status, columns_of, joined, lm_only, one_of
from pipeline.io.conditions import SILENCE
from pipeline.scoring.align import ERRORS, OPTIONAL, Alignment, Op, by_utterance, event_codes, from_events
from pipeline.scoring import language
from pipeline.scoring.config import Comparability


@dataclass(slots=True, kw_only=True)  # not frozen: one per line of a corpus, and a frozen init costs a call per field
class Pair(Grouped):
    """What scoring reads: a reference and the hypothesis an engine wrote for it, with what is known of its audio
    and text. Only sentence_id, reference and hypothesis are needed (`run_pipeline.py score` knows no more)."""
    sentence_id: str
    reference: str
    hypothesis: str
    voice: str = ""
    asr: str = ""
    condition: str = ""
    status: str = Status.OK
    error: str = ""
    audio_path: str = ""
    audio_seconds: float | None = None
    tts_seconds: float | None = None
    asr_seconds: float | None = None
    level_dbfs: float | None = None
    audio_sha256: str = ""
    perplexity: float | None = None
    lm_tokens: int | None = None
    word_surprisal: tuple[float, ...] = ()  # one per word of reference.split(), as a Sentence's
    measures: dict[str, float | None] = dataclasses.field(default_factory=dict)
    speaker_reference: str = ""
    codes: bytes | None = None  # the alignment its reader found (align.py's op codes over the normalized texts):
    # sclite's, through a trn reference's alternations (scoring/alternations.py); None: aligned when scored
    word_confidence: tuple[float | None, ...] | None = None  # one per word of hypothesis.split(): a ctm's
    # confidences (scoring/confidence.py), None for a word whose confidence is not known; None without any

    def __post_init__(self):
        one_of(self.status, SPOKEN, "status")


@dataclass(slots=True, kw_only=True)  # not frozen: 100,000 of them are made at once, and a frozen init costs a call per field
class ScoredUtterance(Grouped):
    id: str  # utterance_id(): <voice>-<condition>-<asr>_<sentence_id>, as in the trn files
    sentence_id: str
    voice: str
    asr: str
    condition: str
    reference: str
    hypothesis: str
    reference_normalized: str
    hypothesis_normalized: str
    ref_words: int | None  # words in the normalized reference (sclite's #Wrd: under -D, with a hypothesis' optional
    # word over nothing)
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
    status: str  # ok, skipped, error, or empty_reference (no WER of its own; its insertions count in the corpus's)
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
        one_of(self.status, (*SPOKEN, "empty_reference"), "status")
        if self.wer is not None and self.wer < 0:
            raise ValueError(f"wer = {self.wer} is negative")

    @property
    def surprised(self) -> bool:
        """Scored speech whose words have their surprisal under the LM: what the surprisal statistics read."""
        return self.status == Status.OK and self.condition != SILENCE and bool(self.word_surprisal)


EVENT_TYPES = (*ERRORS, *OPTIONAL)


@dataclass(slots=True, kw_only=True)  # not frozen, as ScoredUtterance
class ErrorEvent:
    id: str  # the utterance
    type: str  # substitution, deletion or insertion; under sclite -D (`score --optional-words`) also
    # optional_deletion or optional_insertion: a word in parentheses with nothing across, which sclite scores correct
    reference_word: str
    hypothesis_word: str
    position: int  # index in the utterance's alignment, hits included
    surprisal: float | None = lm_only()  # the reference word's surprisal (bits); None for an insertion

    def __post_init__(self):
        one_of(self.type, EVENT_TYPES, "type")


@dataclass(frozen=True, slots=True, kw_only=True)
class Confusion(Grouped):
    voice: str
    asr: str
    condition: str
    reference_word: str
    hypothesis_word: str
    count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupSummary(Grouped):
    voice: str
    asr: str
    condition: str
    normalizer: str
    unit: str = "word"  # what ref_words, errors and the rates count: word, or character in a language written
    # without spaces between words (scoring/language.py); the columns keep their names across languages
    n_utterances: int  # rows scored, those whose reference is empty after normalization among them
    n_excluded: int  # rows not scored: failed synthesis or transcription
    ref_words: int
    errors: int
    substitutions: int | None = None  # the errors by kind, as sclite's sum report gives them (None in a summary
    deletions: int | None = None  # written before they were kept)
    insertions: int | None = None
    sentence_errors: int | None = None  # scored rows with any error: sclite's S.Err, over n_utterances
    micro_wer: float | None  # Σ errors / Σ reference words, as sclite
    macro_wer: float | None  # mean of per-utterance WER (of the rows that have one: a reference word or more)
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


SUBSTITUTION, DELETION, INSERTION = (op.word for op in (Op.SUBSTITUTION, Op.DELETION, Op.INSERTION))  # an enum's
# property is a call per event


@dataclass
class Words:
    """A group's error words: each (reference, hypothesis) word of a substitution, each deleted and each inserted
    word, counted. Only an aligned row has events, and one whose reference was empty has insertions alone, so the
    substitutions of the whole group are those of its scored rows (its confusion pairs)."""
    substituted: Counter = field(default_factory=Counter)
    deleted: Counter = field(default_factory=Counter)
    inserted: Counter = field(default_factory=Counter)

    def add(self, events: list[ErrorEvent]) -> None:
        # each word interned: a count's key would otherwise keep the copy of the word its first event came with, one
        # object per key where one per word will do (a Chinese corpus's characters: 4 MB at 100,000 utterances)
        for e in events:
            if e.type == SUBSTITUTION:
                self.substituted[intern(e.reference_word), intern(e.hypothesis_word)] += 1
            elif e.type == DELETION:
                self.deleted[intern(e.reference_word)] += 1
            elif e.type == INSERTION:
                self.inserted[intern(e.hypothesis_word)] += 1

    def merge(self, later: Words) -> None:
        for mine, theirs in ((self.substituted, later.substituted), (self.deleted, later.deleted),
                             (self.inserted, later.inserted)):
            mine.update(theirs)


@dataclass
class Results:
    normalizer: str
    comparable: Comparability = field(default_factory=Comparability)  # what the WER can stand beside
    language: str = "en"  # the references' (scoring/language.py): its unit is what every rate counts
    utterances: list[ScoredUtterance] = field(default_factory=list)
    events: list[ErrorEvent] = field(default_factory=list)
    confusions: list[Confusion] = field(default_factory=list)
    summary: list[GroupSummary] = field(default_factory=list)
    pralign: list[str] = field(default_factory=list)  # each aligned utterance's REF/HYP/Eval text
    error_words: dict[Group, Words] = field(default_factory=dict)  # each group's error words, as dtl.txt counts them
    _alignments: dict[str, Alignment] = field(default_factory=dict, init=False, repr=False, compare=False)

    @functools.cached_property
    def events_by_id(self) -> dict[str, list[ErrorEvent]]:
        """Each utterance's error events; read once all are in."""
        return by_utterance(self.events)

    def alignment(self, u: ScoredUtterance) -> Alignment:
        """An aligned utterance's alignment, as scoring found it. What is kept of it is its error events (errors.csv)
        beside the normalized texts: every position without an event is a hit. Read back once: the statistics ask
        for each utterance's alignment several times."""
        found = self._alignments.get(u.id)
        if found is None:
            found = self._alignments[u.id] = self._read(u)
        return found

    def codes(self, u: ScoredUtterance) -> bytes:
        """An aligned utterance's op codes (align.py), read back from its error events without its words, and not
        kept: what a statistic that reads no word needs (MAPSSWE: paired.marks), without building the alignment."""
        return event_codes(len(u.reference_normalized.split()), self.events_by_id.get(u.id, []))

    def _read(self, u: ScoredUtterance) -> Alignment:
        return from_events(u.reference_normalized, u.hypothesis_normalized, self.events_by_id.get(u.id, []))

    def words(self, u: ScoredUtterance) -> list[tuple[str, bool, float | None]]:
        """Each normalized reference word of an aligned utterance: (word, failed: substituted or deleted,
        surprisal or None)."""
        bits = u.word_surprisal or None
        out, at = [], 0
        for op, ref, _ in self.alignment(u).ops:
            if ref is not None:
                out.append((ref, op in (Op.SUBSTITUTION, Op.DELETION), bits[at] if bits else None))
                at += 1
        return out

    @property
    def unit(self) -> str:
        return language.unit(self.language, self.normalizer)

    @property
    def rate(self) -> str:
        """CER or WER: the name of this scoring's rates."""
        return language.rate_name(self.language, self.normalizer)

    @property
    def failed(self) -> int:
        return sum(1 for u in self.utterances if u.status == Status.ERROR)
