"""Score a table of (reference, hypothesis) rows: per-utterance counts, error events, confusion pairs and
corpus figures per voice × engine × condition (the records in scoring/utterances.py). Used by the pipeline and by
`run_pipeline.py score`."""
from __future__ import annotations

import contextlib
import functools
import gc
from typing import Callable, Iterable, Iterator, NamedTuple

from pipeline.core.records import Status, utterance_id
from pipeline.io.conditions import SILENCE
from pipeline.scoring import normalize as norm
from pipeline.scoring import align, confidence, sclite
from pipeline.scoring.align import WORDS, align_codes, aligner_of, edits, preload, tally
from pipeline.scoring.config import Comparability, ScoreConfig
from pipeline.scoring.flags import flags
from pipeline.scoring.language import NOASCII, Characters
from pipeline.scoring.tally import Tally
from pipeline.scoring.utterances import Confusion, ErrorEvent, Pair, Results, ScoredUtterance

# characters of text (references' and hypotheses', as written) scored at once: all that is held at once of what is
# being scored, whatever the language or the sentences' length; whether the aligner is compiled depends on all the
# cells aligned so far, not on a chunk's (align.align_codes)
CHUNK_CHARS = 20_000


def char_errors(reference: str, hypothesis: str) -> int:
    """Character edit distance, spaces included: jiwer's S + D + I for CER is the Levenshtein distance, here
    computed by RapidFuzz (which jiwer itself calls) without jiwer's per-call overhead."""
    return _levenshtein()(reference, hypothesis)


@functools.cache
def _levenshtein():
    from rapidfuzz.distance import Levenshtein

    return Levenshtein.distance


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


EMPTY_REFERENCE = ("reference is empty after normalization: no WER of its own; the words written count as insertions "
                   "in the corpus WER, as in sclite and jiwer")


def scored_reference(p: Pair) -> str:
    """The reference a row is scored against. Rows of the silence condition are scored against an empty one:
    nothing was said, so every word heard is an insertion; they have no WER and give their group's hallucination
    rate instead."""
    return "" if p.condition == SILENCE else p.reference


def unheard(p: Pair) -> ScoredUtterance:
    """A row that never reached an engine: it keeps its status and error, with nothing counted."""
    return ScoredUtterance(
        id=utterance_id(sentence_id=p.sentence_id, voice=p.voice, condition=p.condition, asr=p.asr),
        sentence_id=p.sentence_id, voice=p.voice, asr=p.asr, condition=p.condition, reference=scored_reference(p),
        hypothesis=p.hypothesis, reference_normalized="", hypothesis_normalized="", ref_words=None, hits=None,
        substitutions=None, deletions=None, insertions=None, errors=None, wer=None, perplexity=p.perplexity,
        lm_tokens=p.lm_tokens, audio_path=p.audio_path, audio_seconds=p.audio_seconds, tts_seconds=p.tts_seconds,
        asr_seconds=p.asr_seconds, status=p.status, error=p.error, flags=[], level_dbfs=p.level_dbfs,
        audio_sha256=p.audio_sha256, ref_chars=None, char_errors=None, cer=None, word_surprisal=[],
        speaker_reference=p.speaker_reference, measures=dict(p.measures))


def heard(p: Pair, reference: str, normalized: tuple[str, str], words: tuple[list[str], list[str]], codes: bytes,
          normalizer: norm.Normalizer) -> ScoredUtterance:
    """A row an engine heard, scored whole: counted from its alignment's op codes, flagged and rated. `normalized`:
    its reference and hypothesis normalized; `words`: the two split."""
    ref_normalized, hyp_normalized = normalized
    speech_expected = p.condition != SILENCE
    ref_words = align.ref_words(words[0], codes)
    hits, substitutions, deletions, insertions = tally(codes)
    errors = substitutions + deletions + insertions
    # an empty reference still counts what was written (insertions), but has no rate, as for WER
    empty = ref_words == 0 and speech_expected
    ref_chars, char_distance = len(ref_normalized), char_errors(ref_normalized, hyp_normalized)
    return ScoredUtterance(
        id=utterance_id(sentence_id=p.sentence_id, voice=p.voice, condition=p.condition, asr=p.asr),
        sentence_id=p.sentence_id, voice=p.voice, asr=p.asr, condition=p.condition, reference=reference,
        hypothesis=p.hypothesis, reference_normalized=ref_normalized, hypothesis_normalized=hyp_normalized,
        ref_words=ref_words, hits=hits, substitutions=substitutions, deletions=deletions, insertions=insertions,
        errors=errors, wer=round(errors / ref_words, 4) if ref_words else None, perplexity=p.perplexity,
        lm_tokens=p.lm_tokens, audio_path=p.audio_path, audio_seconds=p.audio_seconds, tts_seconds=p.tts_seconds,
        asr_seconds=p.asr_seconds, status=Status.EMPTY_REFERENCE if empty else p.status,
        error=EMPTY_REFERENCE if empty else p.error,
        flags=flags(ref_normalized, hyp_normalized, p.level_dbfs, speech_expected, words),
        level_dbfs=p.level_dbfs, audio_sha256=p.audio_sha256, ref_chars=ref_chars, char_errors=char_distance,
        cer=round(char_distance / ref_chars, 4) if ref_chars else None,
        word_surprisal=normalized_surprisal(reference, p.word_surprisal, ref_normalized, normalizer.reference)
        if p.word_surprisal else [],
        speaker_reference=p.speaker_reference, measures=dict(p.measures))


def normalized_surprisal(reference: str, bits: tuple[float, ...], normalized: str, transform) -> list[float]:
    """Each normalized word's surprisal, from that of the written words (bits, one per word of reference.split());
    none where a normalizer rewrites across words (whisper's numbers): carried_over."""
    if not bits or not normalized:
        return []
    return carried_over(reference, bits, normalized, lambda word: transform(word).split()) or []


def carried_over(text: str, values: tuple, normalized: str, pieces: Callable[[str], list[str]]) -> list | None:
    """Each normalized word's value, from that of the written word it comes from (`values`, one per word of
    text.split(); `pieces`: a written word's normalized words); None where a written word normalized alone does not
    give the words it gives in context."""
    words = text.split()
    if len(values) != len(words):
        return None
    out, parts = [], []
    for word, value in zip(words, values):
        normalized_alone = pieces(word)
        parts += normalized_alone
        out += [value] * len(normalized_alone)
    return out if parts == normalized.split() else None


class Scored(NamedTuple):
    """An utterance scored: its record, its error events, its pralign text (empty when it was not aligned), and its
    words' confidences scored (a ctm's; None without)."""
    utterance: ScoredUtterance
    events: list[ErrorEvent]
    pralign: str
    confidence: confidence.Bits | None = None


def error_events(u: ScoredUtterance, steps: list) -> list[ErrorEvent]:
    """What is kept of an aligned utterance's alignment besides its pralign text: its error events, from its
    edits (align.edits)."""
    surprisal = u.word_surprisal or None
    out = []
    for i, _, run, pos, code, r, h in steps[:-1]:  # the last closes the run of hits at the end
        out.append(ErrorEvent(id=u.id, type=WORDS[code], reference_word=r or "", hypothesis_word=h or "",
                              position=pos, surprisal=surprisal[i + run] if surprisal and r is not None else None))
    return out


def chunks(pairs: Iterable[Pair]) -> Iterator[list[Pair]]:
    """The pairs, CHUNK_CHARS characters of their texts at a time."""
    chunk, held = [], 0
    for p in pairs:
        chunk.append(p)
        held += len(p.reference) + len(p.hypothesis) + 1
        if held >= CHUNK_CHARS:
            yield chunk
            chunk, held = [], 0
    if chunk:
        yield chunk


def prepare(normalizer: str, lang: str, characters: Characters = NOASCII) -> None:
    """Load what scoring with this normalizer loads once (the normalizer, the compiled aligner, RapidFuzz), so that
    processes forked afterwards to score (files.stream) start with it."""
    norm.for_language(normalizer, lang, characters=characters)
    _levenshtein()
    if aligner_of(normalizer) is align_codes:
        preload()


def scored(pairs: Iterable[Pair], normalizer: str, lang: str, aligned: bool = True,
           characters: Characters = NOASCII) -> Iterator[Scored]:
    """Each pair scored, in order: each utterance is aligned alone; a chunk's texts are normalized together (the
    same texts as one at a time: normalize.each) and go through one call of the aligner (pipeline/scoring/align.py),
    compiled past a run's size, and only a chunk's texts, words and op codes are held at once. `aligned`: with
    each row's error events and pralign text; without, its record alone (its counts are the same). `characters`:
    how sclite's normalizers cut characters, as the pairs' alignments found before were cut."""
    normalized = norm.for_language(normalizer, lang, characters=characters)
    aligner = aligner_of(normalizer)  # as the numbers it stands for were counted
    pieces = functools.lru_cache(maxsize=1 << 16)(lambda word: normalized.hypothesis(word).split())  # a corpus says
    # the same words again and again
    for chunk in chunks(pairs):
        spoken = [p for p in chunk if p.status == Status.OK]
        references = list(map(scored_reference, spoken))
        texts = list(zip(normalized.references(references), normalized.hypotheses([p.hypothesis for p in spoken])))
        words = [(r.split(), h.split()) for r, h in texts]
        codes = aligner([r for r, _ in words], [h for _, h in words])
        if aligner is align_codes:  # a recipe counted by jiwer or Kaldi aligns as they do, whatever was found before
            codes = [c if p.codes is None else p.codes for p, c in zip(spoken, codes)]
        rows = iter(zip(references, texts, words, codes))
        for p in chunk:
            if p.status != Status.OK:
                yield Scored(unheard(p), [], "")
                continue
            reference, text, (ref, hyp), c = next(rows)
            u = heard(p, reference, text, (ref, hyp), c, normalized)
            found = None
            if p.word_confidence is not None:
                held = carried_over(p.hypothesis, p.word_confidence, text[1], pieces)
                found = confidence.UNPLACED if held is None or None in held else confidence.bits(c, held)
            if not aligned:
                yield Scored(u, [], "", found)
                continue
            steps = list(edits(ref, hyp, c))
            counts = u.hits, u.substitutions, u.deletions, u.insertions
            yield Scored(u, error_events(u, steps), sclite.pralign(u.id, ref, hyp, c, steps, counts), found)


def evaluate(pairs: Iterable[Pair], options: ScoreConfig | None = None,
             comparable: Comparability | None = None, language: str = "en") -> Results:
    """Every pair scored, and the figures of each voice × engine × condition group. `options`: the score section
    (normalizer, bootstrap resamples and seed); its defaults when not given. `comparable`: what the run's WER is
    comparable with, recorded in summary.json. `language`: the references' language, whose unit (characters or
    words: scoring/language.py) every rate counts.

    What is kept per utterance is its record, its error events and its alignment's text: scoring never holds
    100,000 alignments at once; a later stage reads them back from the events (Results.alignment). files.stream
    writes the same files without keeping even these."""
    options = options or ScoreConfig()
    out = Results(options.normalize, comparable or Comparability(), language=language)
    with without_cycle_collection():
        tallies = Tallies(out)
        for s in scored(pairs, options.normalize, language):
            out.utterances.append(s.utterance)
            out.events += s.events
            if s.pralign:
                out.pralign.append(s.pralign)
            tallies.add(s)
        tallies.close(options)
    return out


class Tallies:
    """Each group's tally, in the order the groups first appear; closed, they give `results` its figures."""

    def __init__(self, results: Results) -> None:
        self.results, self.groups = results, {}

    def add(self, s: Scored) -> None:
        group = s.utterance.group
        t = self.groups.get(group)
        if t is None:
            t = self.groups[group] = Tally()
        t.add(s.utterance, s.events)

    def merge(self, later: Tallies) -> None:
        """Take in the groups' tallies of the rows that come after these (scored elsewhere: files.stream)."""
        for group, t in later.groups.items():
            mine = self.groups.get(group)
            if mine is None:
                self.groups[group] = t
            else:
                mine.merge(t)

    def close(self, options: ScoreConfig, confusions: bool = True) -> None:
        """The results' summary and error words; their confusions too, unless the caller writes them itself from
        confusions() (a corpus's can be a hundred thousand pairs)."""
        r = self.results
        for group, t in self.groups.items():
            r.summary.append(t.summary(group, r.normalizer, r.unit, options.bootstrap, options.seed))
            if confusions:
                r.confusions += t.confusions(group)
            r.error_words[group] = t.words

    def confusions(self) -> Iterator[Confusion]:
        for group, t in self.groups.items():
            yield from t.confusions(group)
