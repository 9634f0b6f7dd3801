"""What scoring writes, in the pipeline's run directory and in `score --out`: the records' CSVs, summary.json,
sclite's trn, pralign and dtl texts."""
from __future__ import annotations

import contextlib
import functools
import heapq
from pathlib import Path
from typing import Iterable, NamedTuple

from pipeline.core import records, store, tables
from pipeline.core.records import ALIGNED, as_row
from pipeline.core.tables import Document, Table
from pipeline.exec import fanout
from pipeline.scoring import sclite
from pipeline.scoring.confidence import Confidences, ConfidenceSummary
from pipeline.scoring.config import Comparability, ScoreConfig
from pipeline.scoring.evaluate import Tallies, chunks, prepare, scored, without_cycle_collection
from pipeline.scoring.labels import Labelled, LabelSummary
from pipeline.scoring.language import NOASCII, Characters
from pipeline.scoring.speakers import Speaker, Speakers, SpeakerSummary, speaker_of
from pipeline.scoring.utterances import Confusion, ErrorEvent, GroupSummary, Pair, Results, ScoredUtterance


def _cell(x) -> str:
    return "" if x is None else str(x)


def dtl(results: Results, top: int = 20) -> str:
    """sclite dtl-style text: confusion pairs and the most deleted and inserted words, per group."""
    lines = [f"Normalizer: {results.normalizer}", ""]
    rate, units = results.rate, f"{results.unit}s"
    for s in results.summary:
        words = results.error_words[s.group]
        lines.append(f"== voice {s.voice or '-'} | asr {s.asr or '-'} | condition {s.condition or '-'}: "
                     f"micro {rate} {_cell(s.micro_wer)}, macro {rate} {_cell(s.macro_wer)}, {s.errors} errors / "
                     f"{s.ref_words} {units}")
        for title, counts, text in (("CONFUSION PAIRS", words.substituted, lambda pair: f"{pair[0]} ==> {pair[1]}"),
                                    ("DELETIONS", words.deleted, str), ("INSERTIONS", words.inserted, str)):
            lines.append(f"{title} (total {sum(counts.values())}, top {top})")
            for key, count in heapq.nsmallest(top, counts.items(), key=lambda kv: (-kv[1], text(kv[0]))):
                lines.append(f"  {count:4d}: {text(key)}")
        lines.append("")
    return "\n".join(lines)


def _ref_line(u: ScoredUtterance) -> str:
    return sclite.trn_line(u.id, u.reference_normalized) if u.status in ALIGNED else ""


def _hyp_line(u: ScoredUtterance) -> str:
    return sclite.trn_line(u.id, u.hypothesis_normalized) if u.status in ALIGNED else ""


UTTERANCES = Table("utterances.csv", ScoredUtterance, "utterances")
EVENTS = Table("errors.csv", ErrorEvent, "events")
CONFUSIONS = Table("confusions.csv", Confusion, "confusions")
SUMMARY = Table("summary.csv", GroupSummary, "summary")
SUMMARY_JSON = Document("summary.json", lambda r: {"normalizer": r.normalizer, "language": r.language, "unit": r.unit,
                                                   "rate": r.rate, "comparable": r.comparable.as_json(),
                                                   "groups": [as_row(s) for s in r.summary]},
                        read=lambda data: {"normalizer": data["normalizer"], "language": data.get("language", "en"),
                                           "comparable": Comparability.from_json(data.get("comparable", {}))})
REF_TRN = Document("ref.trn", lambda r: "".join(map(_ref_line, r.utterances)))
HYP_TRN = Document("hyp.trn", lambda r: "".join(map(_hyp_line, r.utterances)))
PRALIGN = Document("pralign.txt", lambda r: "".join(text + "\n" for text in r.pralign))
DTL = Document("dtl.txt", lambda r: dtl(r))
FILES = (UTTERANCES, EVENTS, CONFUSIONS, SUMMARY, SUMMARY_JSON, REF_TRN, HYP_TRN, PRALIGN, DTL)
# each speaker's counts: `score`'s, where utterance ids are the user's (a run's speakers are its voices)
SPEAKERS = Table("speakers.csv", SpeakerSummary, "speakers")
LABELS = Table("labels.csv", LabelSummary, "labels")  # `score`'s, where an stm reference defines test subsets
CONFIDENCE = Table("confidence.csv", ConfidenceSummary, "confidence")  # `score`'s, where a ctm has confidences
FIGURES = (SUMMARY, SUMMARY_JSON, DTL)  # what is written from the tallies once every row is in, with CONFUSIONS
ALIGNED_FILES = frozenset({EVENTS, CONFUSIONS, PRALIGN, DTL})  # what is read off each alignment's edits


def write(results: Results, out_dir: str | Path) -> list[Path]:
    with without_cycle_collection():
        return tables.write(FILES, results, out_dir)


class Part(NamedTuple):
    """A stretch of pairs scored: the text of its rows in each file written, by file name, how many rows each CSV's
    text holds, and the stretch's tallies. What a worker process gives back: a scored row costs about as
    much to unpickle as to score, its text next to nothing."""
    texts: dict[str, str]
    rows: dict[str, int]
    tallies: Tallies
    speakers: Speakers | None
    confidences: Confidences | None  # where its pairs carry confidences and CONFIDENCE is wanted
    counted: list[tuple[str, str, int, int]] | None  # each scored row's id, system, reference words and errors
    n: int


# how a worker renders its rows, as the files' writers would write them
_ROWS = {table: records.RowWriter(table.name, table.record, lm=False) for table in (UTTERANCES, EVENTS)}


def scored_part(job: tuple[list[Pair], str, str, frozenset[str], Speaker, Characters]) -> Part:
    """A chunk of pairs scored, with its normalizer, language, the names of the files wanted, how an id names its
    speaker and how characters are cut."""
    pairs, normalizer, language, wanted, speaker, characters = job
    tallies, speakers = Tallies(None), Speakers(speaker) if SPEAKERS.name in wanted else None
    confidences = Confidences(speaker) if CONFIDENCE.name in wanted else None
    utterances, events, pralign = [], [], []
    for s in scored(pairs, normalizer, language, aligned=not wanted.isdisjoint(f.name for f in ALIGNED_FILES),
                    characters=characters):
        utterances.append(s.utterance)
        events += s.events
        if s.pralign:
            pralign.append(s.pralign + "\n")
        tallies.add(s)
        if speakers is not None:
            speakers.add(s.utterance)
        if confidences is not None and s.confidence is not None:
            confidences.add(s.utterance, s.confidence)
    texts = {  # only the files written: a trn line or a CSV row that no file takes is not made
        REF_TRN.name: lambda: "".join(map(_ref_line, utterances)),
        HYP_TRN.name: lambda: "".join(map(_hyp_line, utterances)),
        PRALIGN.name: lambda: "".join(pralign),
        UTTERANCES.name: lambda: _ROWS[UTTERANCES].render(utterances),
        EVENTS.name: lambda: _ROWS[EVENTS].render(events)}
    counted = [(u.sentence_id, u.asr, u.ref_words, u.errors) for u in utterances if u.status in ALIGNED] \
        if LABELS.name in wanted else None
    return Part({name: make() for name, make in texts.items() if name in wanted},
                {UTTERANCES.name: len(utterances), EVENTS.name: len(events)}, tallies, speakers,
                confidences if confidences and confidences.counts else None, counted, len(utterances))


def stream(pairs: Iterable[Pair], options: ScoreConfig, comparable: Comparability | None = None,
           language: str = "en", out_dir: str | Path = ".", outputs: Iterable = FILES,
           workers: int | None = None, speaker: Speaker = speaker_of,
           labelled: Labelled | None = None, confidences: Confidences | None = None,
           characters: Characters = NOASCII) -> tuple[Results, int]:
    """The files write(evaluate(pairs, ...)) writes, byte for byte, each row written as it is scored: only each
    group's tally is held (scoring/tally.py), so 100,000 pairs take about the memory of one. For pairs that carry
    nothing of a run (no LM figures, no measures: what `run_pipeline.py score` reads). `outputs`: which of FILES,
    SPEAKERS and LABELS to write, summary.csv and summary.json always; the others are removed from out_dir (an
    earlier scoring's), and what only they need is not computed (without errors.csv, confusions.csv, dtl.txt and
    pralign.txt, no alignment is walked). `workers`: processes that score chunks of pairs (pipeline/exec/fanout.py;
    default one per core); each pair is scored alone, so the files are the same for any number. `speaker`: how
    speakers.csv reads an utterance's speaker from its id (a module-level function: the workers are given it).
    `labelled`: the test subsets labels.csv counts, where LABELS is wanted; `confidences`: the tally of the pairs'
    confidences, filled here, that confidence.csv is written from where CONFIDENCE is wanted and a system's pairs
    carry confidences; `characters`: how sclite's normalizers cut characters (its -c with -D or DH). Returns the
    results' figures (no rows) and how many rows were scored."""
    out = Path(out_dir)
    wanted = {*outputs, SUMMARY, SUMMARY_JSON}
    names = frozenset(f.name for f in wanted)
    results = Results(options.normalize, comparable or Comparability(), language=language)
    tallies, speakers, n = Tallies(results), Speakers(speaker), 0
    confidences = Confidences(speaker) if confidences is None else confidences
    with contextlib.ExitStack() as files, without_cycle_collection():
        csvs = {t: files.enter_context(records.RowWriter(out / t.name, t.record, lm=False))
                for t in (UTTERANCES, EVENTS) if t in wanted}
        texts = {f: files.enter_context(store.atomic_file(out / f.name))
                 for f in (REF_TRN, HYP_TRN, PRALIGN) if f in wanted}
        jobs = ((chunk, options.normalize, language, names, speaker, characters) for chunk in chunks(pairs))
        parts = files.enter_context(contextlib.closing(fanout.ordered(  # its workers stopped before the files go
            scored_part, jobs, fanout.default_workers() if workers is None else workers,
            prepare=functools.partial(prepare, options.normalize, language, characters))))
        for part in parts:
            n += part.n
            for t, writer in csvs.items():
                writer.write_rendered(part.texts[t.name], part.rows[t.name])
            for f, file in texts.items():
                file.write(part.texts[f.name])
            tallies.merge(part.tallies)
            if part.speakers is not None:
                speakers.merge(part.speakers)
            if part.confidences is not None:
                confidences.merge(part.confidences)
            if labelled is not None and part.counted is not None:
                for counted in part.counted:
                    labelled.add(*counted)
        if CONFUSIONS in wanted:
            with records.RowWriter(out / CONFUSIONS.name, Confusion) as confusions:  # before the bootstrap's arrays
                for c in tallies.confusions():
                    confusions.write(c)
        tallies.close(options, confusions=False)
        tables.write([f for f in FIGURES if f in wanted], results, out)
        if SPEAKERS in wanted:
            records.write_csv(out / SPEAKERS.name, SpeakerSummary, speakers.rows(results.unit))
        if LABELS in wanted and labelled is not None:
            records.write_csv(out / LABELS.name, LabelSummary, labelled.rows(results.unit))
        confident = confidences.rows(results.unit)
        if CONFIDENCE in wanted and confident:
            records.write_csv(out / CONFIDENCE.name, ConfidenceSummary, confident)
    for f in (*FILES, SPEAKERS, LABELS, CONFIDENCE):
        if f not in wanted or f is CONFIDENCE and not confident:
            (out / f.name).unlink(missing_ok=True)
    return results, n
