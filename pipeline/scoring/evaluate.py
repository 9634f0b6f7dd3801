"""Score a table of (reference, hypothesis) rows: per-utterance counts, error events, confusion pairs and
corpus figures per voice × engine × condition. Used by the pipeline and by `run_pipeline.py score`."""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.asr.listener import Transcript
from pipeline.core import tables
from pipeline.core.options import option
from pipeline.core.records import SPOKEN, Group, Grouped, as_row, columns_of, joined, lm_only, one_of, utterance_id
from pipeline.core.tables import Document, Table
from pipeline.io.conditions import SILENCE
from pipeline.lm.sentences import Sentence
from pipeline.scoring import normalize as norm
from pipeline.scoring import sclite
from pipeline.scoring.align import ERRORS, Alignment, Op, align_codes, by_utterance, from_codes, from_events
from pipeline.scoring.flags import NAMES as FLAGS
from pipeline.scoring.flags import flags
from pipeline.scoring.rates import corpus_rates, spearman

if TYPE_CHECKING:
    from pipeline.scoring.comparisons import Comparison


@dataclass(frozen=True)
class ScoreConfig:
    normalize: str = option("basic", "text normalization before alignment", flag="--normalize",
                            choices=tuple(norm.NORMALIZERS))
    bootstrap: int = option(1000, "bootstrap resamples for the 95% CI", at_least=0)
    seed: int = option(1337, "bootstrap seed")
    headline: str = option("micro", "the WER the tables show first: micro (Σ errors / Σ words, as sclite) or macro "
                           "(the mean of per-sentence WER, as seed-tts-eval)", choices=("micro", "macro"))


# Bumped when a change of this project alters what scoring outputs for the same transcripts (the alignment, a
# normalizer, how a rate is pooled): compare-runs refuses to set runs of different revisions side by side. Not
# bumped for changes that leave scores as they were, so an upgrade does not stop comparisons with older runs.
# 2: the basic normalizer puts both texts in Unicode's NFC form.
SCORING_REVISION = 2
CHUNK = 10_000  # utterances aligned per compiled call: their words and op codes are all that is held at once


@dataclass(frozen=True, slots=True, kw_only=True)
class Pair(Grouped):
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
        one_of(self.status, SPOKEN, "status")

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
        one_of(self.status, (*SPOKEN, "empty_reference"), "status")
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
        one_of(self.type, ERRORS, "type")


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


@dataclass
class Results:
    normalizer: str
    comparable: dict = field(default_factory=dict)  # what the WER can stand beside (config/recipes.py Comparability)
    utterances: list[ScoredUtterance] = field(default_factory=list)
    events: list[ErrorEvent] = field(default_factory=list)
    confusions: list[Confusion] = field(default_factory=list)
    summary: list[GroupSummary] = field(default_factory=list)
    pralign: list[str] = field(default_factory=list)  # each aligned utterance's REF/HYP/Eval text
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
            found = self._alignments[u.id] = from_events(u.reference_normalized, u.hypothesis_normalized,
                                                         self.events_by_id.get(u.id, []))
        return found

    @property
    def failed(self) -> int:
        return sum(1 for u in self.utterances if u.status == "error")


def _round(x: float | None, digits: int = 4) -> float | None:
    return None if x is None else round(x, digits)


def hallucination_wpm(members: list[ScoredUtterance]) -> float | None:
    """Words an engine wrote per minute of audio in which nothing was said (the silence condition)."""
    minutes = sum(u.audio_seconds or 0.0 for u in members) / 60
    return sum(len(u.hypothesis_normalized.split()) for u in members) / minutes if minutes else None


def char_errors(reference: str, hypothesis: str) -> int:
    """Character edit distance, spaces included: jiwer's S + D + I for CER is the Levenshtein distance, here
    computed by RapidFuzz (which jiwer itself calls) without jiwer's per-call overhead."""
    from rapidfuzz.distance import Levenshtein

    return Levenshtein.distance(reference, hypothesis)


@contextlib.contextmanager
def without_cycle_collection():
    """Scoring makes a few hundred thousand small objects with no reference cycles; Python's cycle collector
    would walk them again and again as they pile up (a fifth of the time at 100,000 utterances)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


EMPTY_REFERENCE = "reference is empty after normalization; left out of corpus WER"


@dataclass(frozen=True, slots=True)
class Texts:
    """An utterance's texts as scoring reads them: normalized when it reached an engine.

    Rows of the silence condition are scored against an empty reference: nothing was said, so every word heard is
    an insertion; they have no WER and give their group's hallucination rate instead."""
    reference: str
    reference_normalized: str
    hypothesis_normalized: str

    @classmethod
    def of(cls, p: Pair, transform) -> Texts:
        reference = "" if p.condition == SILENCE else p.reference
        heard = p.status == "ok"
        return cls(reference, transform(reference) if heard else "", transform(p.hypothesis) if heard else "")


def score_one(p: Pair, t: Texts, a: Alignment | None, transform) -> ScoredUtterance:
    """An utterance scored, whole: counted, flagged and rated from its alignment (None: it never reached an
    engine, and keeps its status and error)."""
    speech_expected = p.condition != SILENCE
    # an empty reference still counts what was written (insertions), but has no rate, as for WER
    empty = a is not None and a.ref_words == 0 and speech_expected
    ref_chars = len(t.reference_normalized) if a else None
    errors = char_errors(t.reference_normalized, t.hypothesis_normalized) if a else None
    return ScoredUtterance(
        id=utterance_id(sentence_id=p.sentence_id, voice=p.voice, condition=p.condition, asr=p.asr),
        sentence_id=p.sentence_id, voice=p.voice, asr=p.asr, condition=p.condition, reference=t.reference,
        hypothesis=p.hypothesis, reference_normalized=t.reference_normalized,
        hypothesis_normalized=t.hypothesis_normalized, ref_words=a.ref_words if a else None,
        hits=a.hits if a else None, substitutions=a.substitutions if a else None,
        deletions=a.deletions if a else None, insertions=a.insertions if a else None,
        errors=a.errors if a else None, wer=_round(a.wer) if a else None, perplexity=p.perplexity,
        lm_tokens=p.lm_tokens, audio_path=p.audio_path, audio_seconds=p.audio_seconds, tts_seconds=p.tts_seconds,
        asr_seconds=p.asr_seconds, status="empty_reference" if empty else p.status,
        error=EMPTY_REFERENCE if empty else p.error,
        flags=flags(t.reference_normalized, t.hypothesis_normalized, p.level_dbfs, speech_expected) if a else [],
        level_dbfs=p.level_dbfs, audio_sha256=p.audio_sha256, ref_chars=ref_chars, char_errors=errors,
        cer=_round(errors / ref_chars) if ref_chars else None,
        word_surprisal=normalized_surprisal(t.reference, p.word_surprisal, t.reference_normalized, transform),
        speaker_reference=p.speaker_reference, measures=dict(p.measures))


def normalized_surprisal(reference: str, bits: tuple[float, ...], normalized: str, transform) -> list[float]:
    """Each normalized word's surprisal, from that of the written words (bits, one per word of
    reference.split()): a written word normalized alone must give the words it gives in context, else none (a
    normalizer that rewrites across words, such as whisper's numbers, leaves that sentence without surprisal)."""
    words = reference.split()
    if not bits or len(bits) != len(words) or not normalized:
        return []
    out, parts = [], []
    for word, b in zip(words, bits):
        pieces = transform(word).split()
        parts += pieces
        out += [b] * len(pieces)
    return out if parts == normalized.split() else []


def kept(u: ScoredUtterance, a: Alignment, out: Results) -> None:
    """What is kept of an aligned utterance's alignment: its error events and its pralign text."""
    surprisal = u.word_surprisal or None
    at = -1  # the reference word an op is at
    for pos, (op, r, h) in enumerate(a.ops):
        at += op != Op.INSERTION
        if op != Op.HIT:
            out.events.append(ErrorEvent(id=u.id, type=op.word, reference_word=r or "", hypothesis_word=h or "",
                                         position=pos,
                                         surprisal=surprisal[at] if surprisal and op != Op.INSERTION else None))
    out.pralign.append(sclite.pralign(u.id, a))


def evaluate(pairs: list[Pair], options: ScoreConfig | None = None, comparable: dict | None = None) -> Results:
    """Every pair scored, and the figures of each voice × engine × condition group. `options`: the score section
    (normalizer, bootstrap resamples and seed); its defaults when not given. `comparable`: what the run's WER is
    comparable with, recorded in summary.json.

    Each utterance is aligned alone; all of them go through one compiled call (pipeline/scoring/align.py).
    What is kept per utterance is its record, its error events and its alignment's text: scoring never holds
    100,000 alignments at once; a later stage reads them back from the events (Results.alignment)."""
    options = options or ScoreConfig()
    with without_cycle_collection():
        return _evaluate(pairs, options.normalize, options.bootstrap, options.seed, comparable or {})


def _evaluate(pairs: list[Pair], normalizer: str, n_boot: int, seed: int, comparable: dict) -> Results:
    transform = norm.get(normalizer)
    out = Results(normalizer, comparable)
    for start in range(0, len(pairs), CHUNK):
        chunk = pairs[start:start + CHUNK]
        texts = [Texts.of(p, transform) for p in chunk]
        words = [(t.reference_normalized.split(), t.hypothesis_normalized.split())
                 for p, t in zip(chunk, texts) if p.status == "ok"]
        codes = align_codes([r for r, _ in words], [h for _, h in words])
        alignments = (from_codes(r, h, c) for (r, h), c in zip(words, codes))  # one at a time
        for p, t in zip(chunk, texts):
            a = next(alignments) if p.status == "ok" else None
            u = score_one(p, t, a, transform)
            if a is not None:
                kept(u, a, out)
            out.utterances.append(u)
    events = out.events_by_id
    for group, members in groups(out).items():
        voice, engine, condition = group
        scored = [u for u in members if u.status == "ok"]
        counts = [([u.errors for u in scored], [u.ref_words for u in scored])]
        if condition != SILENCE:
            counts.append(([u.char_errors for u in scored], [u.ref_chars for u in scored]))
        c, *rest = corpus_rates(counts, n_boot, seed)
        chars = rest[0] if rest else None
        rated = [u for u in scored if u.wer is not None]
        rho = spearman([u.perplexity for u in rated], [u.wer for u in rated])
        flag_counts = Counter(f for u in members for f in u.flags)
        out.summary.append(GroupSummary(
            voice=voice, asr=engine, condition=condition, normalizer=normalizer, n_utterances=c.n_utterances,
            n_excluded=len(members) - len(scored), ref_words=c.ref_words, errors=c.errors,
            micro_wer=_round(c.micro_wer), macro_wer=_round(c.macro_wer), ci95_low=_round(c.ci_low),
            ci95_high=_round(c.ci_high), spearman_n=rho.n, spearman_rho=_round(rho.rho),
            spearman_p=_round(rho.p, 6), flagged=sum(1 for u in members if u.flags),
            flag_counts={f: flag_counts[f] for f in FLAGS},
            hallucination_wpm=_round(hallucination_wpm(scored), 2) if condition == SILENCE else None,
            micro_cer=_round(chars.micro_wer) if chars else None, cer_ci95_low=_round(chars.ci_low) if chars else None,
            cer_ci95_high=_round(chars.ci_high) if chars else None, macro_ci95_low=_round(c.macro_low),
            macro_ci95_high=_round(c.macro_high)))
        pairs = Counter((e.reference_word, e.hypothesis_word) for u in scored for e in events.get(u.id, ())
                        if e.type == Op.SUBSTITUTION.word)
        out.confusions += [Confusion(voice=voice, asr=engine, condition=condition, reference_word=r,
                                     hypothesis_word=h, count=count)
                           for (r, h), count in sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))]
    return out


def groups(results: Results) -> dict[Group, list[ScoredUtterance]]:
    """The utterances of each group, in order."""
    out: dict[Group, list[ScoredUtterance]] = {}
    for u in results.utterances:
        out.setdefault(u.group, []).append(u)
    return out


def aligned(results: Results) -> list[ScoredUtterance]:
    """The utterances that were aligned: the ones that reached scoring, empty references included."""
    return [u for u in results.utterances if u.status in ("ok", "empty_reference")]


def _cell(x) -> str:
    return "" if x is None else str(x)


def dtl(results: Results, top: int = 20) -> str:
    """sclite dtl-style text: confusion pairs and the most deleted and inserted words, per group."""
    lines = [f"Normalizer: {results.normalizer}", ""]
    members, by_id = groups(results), results.events_by_id
    for s in results.summary:
        events = [e for u in members[s.group] for e in by_id.get(u.id, ())]
        lines.append(f"== voice {s.voice or '-'} | asr {s.asr or '-'} | condition {s.condition or '-'}: "
                     f"micro WER {_cell(s.micro_wer)}, macro WER {_cell(s.macro_wer)}, {s.errors} errors / "
                     f"{s.ref_words} words")
        for title, kind, word in (("CONFUSION PAIRS", Op.SUBSTITUTION.word, None),
                                  ("DELETIONS", Op.DELETION.word, "reference_word"),
                                  ("INSERTIONS", Op.INSERTION.word, "hypothesis_word")):
            if word is None:
                counts = Counter(f"{e.reference_word} ==> {e.hypothesis_word}" for e in events if e.type == kind)
            else:
                counts = Counter(getattr(e, word) for e in events if e.type == kind)
            lines.append(f"{title} (total {sum(counts.values())}, top {top})")
            for text, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]:
                lines.append(f"  {count:4d}: {text}")
        lines.append("")
    return "\n".join(lines)


FILES = (  # what scoring writes, in the pipeline's run directory and in `score --out`
    Table("utterances.csv", ScoredUtterance, "utterances"),
    Table("errors.csv", ErrorEvent, "events"),
    Table("confusions.csv", Confusion, "confusions"),
    Table("summary.csv", GroupSummary, "summary"),
    Document("summary.json", lambda r: {"normalizer": r.normalizer, "comparable": r.comparable,
                                        "groups": [as_row(s) for s in r.summary]},
             read=lambda data: {"normalizer": data["normalizer"], "comparable": data.get("comparable", {})}),
    Document("ref.trn", lambda r: sclite.write_trn([(u.id, u.reference_normalized) for u in aligned(r)])),
    Document("hyp.trn", lambda r: sclite.write_trn([(u.id, u.hypothesis_normalized) for u in aligned(r)])),
    Document("pralign.txt", lambda r: "".join(text + "\n" for text in r.pralign)),
    Document("dtl.txt", lambda r: dtl(r)),
)


def write(results: Results, out_dir: str | Path) -> list[Path]:
    with without_cycle_collection():
        return tables.write(FILES, results, out_dir)


def summary_table(summary: list[GroupSummary], n_utterances: int, confident: list[Comparison] = (),
                  macro_first: bool = False) -> str:
    """A short fixed-width table for the terminal (the headline WER first, with its own CI, and the rows each
    group left out), the most confident comparisons, then the health flags and the hallucination rates."""
    rates = f"{'macro WER':>9} {'micro WER':>9}" if macro_first else f"{'micro WER':>9} {'macro WER':>9}"
    head = (f"{'voice':<16} {'asr':<24} {'condition':<14} {'n':>4} {'excluded':>8} {rates} "
            f"{('macro' if macro_first else 'micro') + ' 95% CI':>15}")
    lines = [head, "-" * len(head)]
    for s in summary:
        low, high = (s.macro_ci95_low, s.macro_ci95_high) if macro_first else (s.ci95_low, s.ci95_high)
        ci = f"{low:.3f}-{high:.3f}" if low is not None else "n/a"
        micro = f"{s.micro_wer:.3f}" if s.micro_wer is not None else "n/a"
        macro = f"{s.macro_wer:.3f}" if s.macro_wer is not None else "n/a"
        if s.hallucination_wpm is not None:
            micro, macro, ci = "", "", f"{s.hallucination_wpm:.1f} words/min"
        lines.append(f"{s.voice or '-':<16} {s.asr or '-':<24} {s.condition or '-':<14} "
                     f"{s.n_utterances:>4} {s.n_excluded:>8} {(macro if macro_first else micro):>9} "
                     f"{(micro if macro_first else macro):>9} {ci:>15}")
    if confident:
        lines.append("most confident comparisons (MAPSSWE, Holm-corrected):")
        lines += [f"  {c.verdict}" for c in confident]
    counts = {f: sum(s.flag_counts.get(f, 0) for s in summary) for f in FLAGS}
    flagged = sum(s.flagged for s in summary)
    named = ", ".join(f"{f} {n}" for f, n in counts.items() if n)
    lines.append(f"{flagged} of {n_utterances} utterances flagged" +
                 (f" ({named}): see the flags column" if flagged else ""))
    if any(s.hallucination_wpm is not None for s in summary):
        lines.append("silence rows: words written per minute of audio with no speech (they have no WER)")
    return "\n".join(lines)


def failures(utterances: list[ScoredUtterance], where: str, shown: int = 5) -> str:
    """How many rows failed, the first few with their reasons, and where the rest are; "" when none did."""
    failed = [u for u in utterances if u.status == "error"]
    if not failed:
        return ""
    lines = [f"{len(failed)} of {len(utterances)} rows failed, left out of every figure:"]
    lines += [f"  {u.sentence_id} ({', '.join(p for p in (u.voice, u.condition, u.asr) if p)}): {u.error}"
              for u in failed[:shown]]
    if len(failed) > shown:
        lines.append(f"  … and {len(failed) - shown} more")
    lines.append(f"  every failed row: {where} (status error; the error column says why)")
    return "\n".join(lines)
