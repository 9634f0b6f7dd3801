"""Score a table of (reference, hypothesis) rows: per-utterance counts, error events, confusion pairs and
corpus figures per voice × engine × condition (the records in scoring/utterances.py). Used by the pipeline and by
`run_pipeline.py score`."""
from __future__ import annotations

import contextlib
import gc
from collections import Counter
from dataclasses import dataclass

from pipeline.core.records import ALIGNED, Group, Status, utterance_id
from pipeline.io.conditions import SILENCE
from pipeline.scoring import normalize as norm
from pipeline.scoring import sclite
from pipeline.scoring.align import WORDS, Alignment, Op, align_codes, edits, jiwer_codes, tally
from pipeline.scoring.config import Comparability, ScoreConfig
from pipeline.scoring.flags import NAMES as FLAGS
from pipeline.scoring.flags import flags
from pipeline.scoring.rates import corpus_rates, spearman
from pipeline.scoring.utterances import Confusion, ErrorEvent, GroupSummary, Pair, Results, ScoredUtterance

CHUNK = 10_000  # utterances aligned per call of the aligner: their words and op codes are all that is held at once


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
    def of(cls, p: Pair, normalizer: norm.Normalizer) -> Texts:
        reference = "" if p.condition == SILENCE else p.reference
        heard = p.status == Status.OK
        return cls(reference, normalizer.reference(reference) if heard else "",
                   normalizer.hypothesis(p.hypothesis) if heard else "")


def score_one(p: Pair, t: Texts, a: Alignment | None, normalizer: norm.Normalizer) -> ScoredUtterance:
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
        asr_seconds=p.asr_seconds, status=Status.EMPTY_REFERENCE if empty else p.status,
        error=EMPTY_REFERENCE if empty else p.error,
        flags=flags(t.reference_normalized, t.hypothesis_normalized, p.level_dbfs, speech_expected) if a else [],
        level_dbfs=p.level_dbfs, audio_sha256=p.audio_sha256, ref_chars=ref_chars, char_errors=errors,
        cer=_round(errors / ref_chars) if ref_chars else None,
        word_surprisal=normalized_surprisal(t.reference, p.word_surprisal, t.reference_normalized,
                                            normalizer.reference),
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


def kept(u: ScoredUtterance, ref: list[str], hyp: list[str], codes: list[int], out: Results) -> None:
    """What is kept of an aligned utterance's alignment: its error events and its pralign text."""
    surprisal = u.word_surprisal or None
    for i, run, pos, code, r, h in edits(ref, hyp, codes):
        if code is None:
            break
        out.events.append(ErrorEvent(id=u.id, type=WORDS[code], reference_word=r or "", hypothesis_word=h or "",
                                     position=pos, surprisal=surprisal[i + run] if surprisal and r is not None
                                     else None))
    out.pralign.append(sclite.pralign(u.id, ref, hyp, codes))


def evaluate(pairs: list[Pair], options: ScoreConfig | None = None,
             comparable: Comparability | None = None, language: str = "en") -> Results:
    """Every pair scored, and the figures of each voice × engine × condition group. `options`: the score section
    (normalizer, bootstrap resamples and seed); its defaults when not given. `comparable`: what the run's WER is
    comparable with, recorded in summary.json. `language`: the references' language, whose unit (characters or
    words: scoring/language.py) every rate counts.

    Each utterance is aligned alone; all of them go through one call of the aligner (pipeline/scoring/align.py),
    compiled past a run's size. What is kept per utterance is its record, its error events and its alignment's
    text: scoring never holds 100,000 alignments at once; a later stage reads them back from the events
    (Results.alignment)."""
    options = options or ScoreConfig()
    with without_cycle_collection():
        return _evaluate(pairs, options.normalize, options.bootstrap, options.seed, comparable or Comparability(),
                         language)


def _evaluate(pairs: list[Pair], normalizer: str, n_boot: int, seed: int, comparable: Comparability,
              lang: str) -> Results:
    normalized = norm.for_language(normalizer, lang)
    out = Results(normalizer, comparable, language=lang)
    aligner = jiwer_codes if normalizer in norm.JIWER_COUNTED else align_codes  # as its published table was counted
    for start in range(0, len(pairs), CHUNK):
        chunk = pairs[start:start + CHUNK]
        texts = [Texts.of(p, normalized) for p in chunk]
        words = [(t.reference_normalized.split(), t.hypothesis_normalized.split())
                 for p, t in zip(chunk, texts) if p.status == Status.OK]
        codes = iter(zip(words, aligner([r for r, _ in words], [h for _, h in words])))
        for p, t in zip(chunk, texts):
            if p.status != Status.OK:
                out.utterances.append(score_one(p, t, None, normalized))
                continue
            (ref, hyp), c = next(codes)
            u = score_one(p, t, Alignment(len(ref), *tally(c)), normalized)  # its counts: kept() walks the codes
            kept(u, ref, hyp, c, out)
            out.utterances.append(u)
    events = out.events_by_id
    for group, members in groups(out).items():
        voice, engine, condition = group
        scored = [u for u in members if u.status == Status.OK]
        counts = [([u.errors for u in scored], [u.ref_words for u in scored])]
        if condition != SILENCE:
            counts.append(([u.char_errors for u in scored], [u.ref_chars for u in scored]))
        c, *rest = corpus_rates(counts, n_boot, seed, macro={0})  # the macro CER has no column
        chars = rest[0] if rest else None
        rated = [u for u in scored if u.wer is not None]
        rho = spearman([u.perplexity for u in rated], [u.wer for u in rated])
        flag_counts = Counter(f for u in members for f in u.flags)
        out.summary.append(GroupSummary(
            voice=voice, asr=engine, condition=condition, normalizer=normalizer, unit=out.unit,
            n_utterances=c.n_utterances,
            n_excluded=len(members) - len(scored), ref_words=c.ref_words, errors=c.errors,
            micro_wer=_round(c.micro_wer), macro_wer=_round(c.macro_wer), ci95_low=_round(c.ci_low),
            ci95_high=_round(c.ci_high), spearman_n=rho.n, spearman_rho=_round(rho.rho),
            spearman_p=_round(rho.p, 6), flagged=sum(1 for u in members if u.flags),
            flag_counts={f: flag_counts[f] for f in FLAGS},
            hallucination_wpm=_round(hallucination_wpm(scored), 2) if condition == SILENCE else None,
            micro_cer=_round(chars.micro_wer) if chars else None, cer_ci95_low=_round(chars.ci_low) if chars else None,
            cer_ci95_high=_round(chars.ci_high) if chars else None, macro_ci95_low=_round(c.macro_low),
            macro_ci95_high=_round(c.macro_high)))
        substitution = Op.SUBSTITUTION.word
        pairs = Counter((e.reference_word, e.hypothesis_word) for u in scored for e in events.get(u.id, ())
                        if e.type == substitution)
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
    return [u for u in results.utterances if u.status in ALIGNED]
