"""assess: speech → measures.csv: each selected measure (pipeline/measures/: DNSMOS, speaker similarity, MCD, …)
of each speech row, on the row's audio at the measure's rate (16 kHz: what the ASR hears), each utterance alone,
given what the measure declared it needs of the row (its speaker reference, its natural recording, its text).

Each score is cached as a sealed record keyed by exactly what determines it: the audio's sha256, the measure, its
model files' sha256 and the sha256 of each need it declared (a file's content; a text's). A measure never sees a
transcript, so it cannot change one. Embeddings (Resemblyzer's) go to embeddings.npz, for each voice's consistency
and the similarity between voices (statistics/voices.py)."""
from __future__ import annotations

import hashlib
import io
import time
from dataclasses import replace

import numpy as np

from pipeline.config import paths
from pipeline.config.run import Config
from pipeline.core import records, store
from pipeline.core.records import Status
from pipeline.core.source import Source
from pipeline.exec import executor
from pipeline.exec.items import Item, Unusable, cached_map, tally
from pipeline.io import audio
from pipeline.io.speech import Speech
from pipeline.measures import base as measures
from pipeline.measures import calibration
from pipeline.measures.assessor import Assessed, Assessor, Clip, Measured
from pipeline.run import artifacts
from pipeline.run.stage import Outcome, Stage

LABELS = {measures.SPEAKER_REFERENCE: "speaker reference", measures.NATURAL: "natural recording"}


def models(cfg: Config) -> dict[str, Source]:
    return {name: measures.MEASURES.get(name).source() for name in measures.selected(cfg.assess)}


def needed(declared: measures.Declaration, row: Speech, by_voice: dict[str, str], texts: dict[str, str]) -> dict:
    """Each need the measure declared, as the row has it: a path for audio ("" where there is none), the text."""
    have = {measures.SPEAKER_REFERENCE: row.speaker_reference or by_voice.get(row.voice, ""),
            measures.NATURAL: row.natural, measures.TEXT: texts.get(row.sentence_id, "")}
    return {need: have[need] for need in declared.needs}


def key(audio_sha: str, name: str, model: list[str], needs: dict) -> str:
    """The speaker reference's slot stands for every measure (None where it needs none), as before the other needs
    were named, so the scores every run shares stay usable; each other need declared follows."""
    def content(need: str, value: str) -> str | None:
        if need == measures.TEXT:
            return hashlib.sha256(value.encode()).hexdigest()
        return store.sha256_or_none(value) if value else None

    reference = needs.get(measures.SPEAKER_REFERENCE, "")
    rest = [content(n, v) for n, v in needs.items() if n != measures.SPEAKER_REFERENCE]
    return store.key_of([audio_sha, name, model, content(measures.SPEAKER_REFERENCE, reference), *rest])


def load(path: str, rate: int) -> np.ndarray:
    """16 kHz as every engine hears it; another rate as librosa.load gives it, as the measures' references do."""
    return audio.load_16k(path) if rate == audio.SAMPLE_RATE else audio.load_at(path, rate)


def heard(path: str, needs: dict, rate: int) -> tuple:
    """A measure's input: the audio at its rate, and each need (audio at the same rate; None when the row has none
    or it cannot be read: the row then says why, naming the file); and what completes its Assessed."""
    try:
        samples = load(path, rate)
    except audio.BadAudio as e:
        raise Unusable(str(e)) from None
    given, notes = {}, []
    for need, value in needs.items():
        if need == measures.TEXT or not value:
            given[need] = value if need == measures.TEXT else None
            continue
        try:
            given[need] = load(value, rate)
        except audio.BadAudio as e:
            given[need] = None
            notes.append(f"{LABELS[need]} unusable: {e}")
    sha = store.sha256_or_none(path) or ""
    return Clip(samples, given, tuple(notes)), lambda done: replace(done, audio_sha256=sha)


def run(cfg: Config, loaded: dict) -> Outcome:
    speech: list[Speech] = [s for s in loaded["speech"] if s.status == Status.OK]
    sources: dict[str, Source] = loaded["models"]
    values: dict[int, dict] = {i: {} for i in range(len(speech))}
    notes: dict[int, list[str]] = {i: [] for i in range(len(speech))}
    status = {i: Status.OK for i in range(len(speech))}
    embeddings: dict[str, np.ndarray] = {}
    files, reused, failed = {}, 0, 0
    seconds: dict[str, float] = {}  # each measure's wall time in this run, its model's load included
    by_voice = dict(measures.reference_pair(p) for p in cfg.assess.speaker_references)
    texts = {s.sentence_id: s.text for s in loaded["sentences"]}
    with executor.make(cfg.executor) as pool:
        for name, source in sources.items():
            declared = measures.MEASURES.get(name)
            model = source.content(cfg.models_dir)
            items = {}
            for i, s in enumerate(speech):
                needs = needed(declared, s, by_voice, texts)
                sha = store.sha256_or_none(s.audio_path)
                item_key = key(sha, name, model, needs) if sha else ""
                record = paths.measure_record(cfg, measure=name, voice=s.voice, condition=s.condition,
                                              sentence_id=s.sentence_id)
                items[i] = Item(item_key, record, lambda p=s.audio_path, n=needs, r=declared.rate: heard(p, n, r),
                                shared=paths.shared_record(cfg, "measures", item_key))
            started = time.perf_counter()
            results, cached_here = cached_map(pool, (Assessor, (name, source, cfg.assess.threads)), items,
                                              result=Assessed, chunk=16, desc=f"assess {name}", noun="scores")
            seconds[name] = round(time.perf_counter() - started, 3)
            files.update(source.hashes(cfg.models_dir))
            reused += cached_here
            for i, done in results.items():
                if done.status == Status.ERROR:
                    failed += 1
                    status[i] = Status.ERROR
                    notes[i].append(done.error)
                    continue
                values[i].update(done.scores.values)
                notes[i] += done.scores.notes
                if done.scores.embedding:
                    embeddings[speech[i].id] = np.asarray(done.scores.embedding, dtype=np.float32)
            for i in values:  # every row has every column, empty where there is no value
                for column in declared.columns:
                    values[i].setdefault(column, None)
    rows = [Measured(sentence_id=s.sentence_id, voice=s.voice, condition=s.condition,
                     audio_sha256=store.sha256_or_none(s.audio_path) or "", status=status[i],
                     notes=list(dict.fromkeys(notes[i])), values=values[i],
                     speaker_reference=s.speaker_reference or by_voice.get(s.voice, ""), natural=s.natural)
            for i, s in enumerate(speech)]
    out, vectors, declared = artifacts.files("measures", cfg)
    buf = io.BytesIO()
    np.savez(buf, keys=np.array(list(embeddings), dtype=str),
             vectors=np.stack(list(embeddings.values())) if embeddings else np.zeros((0, 0), np.float32))
    store.write_bytes(vectors, buf.getvalue())
    described = {name: measures.MEASURES.get(name).described() for name in sources}
    fitted = calibrated(cfg, rows, described)
    if fitted is not None:
        described[calibration.NAME] = fitted
    records.write_csv(out, Measured, rows)
    store.write_json(declared, {name: d.as_json() for name, d in described.items()})
    return Outcome({**tally([r.status for r in rows], reused), "measures": list(sources), "measure_seconds": seconds},
                   files, failed=failed)


def calibrated(cfg: Config, rows: list[Measured], described: dict) -> measures.Described | None:
    """The calibrated_<measure> columns of `assess.calibration`, added to each row (empty outside the range
    each fit holds for); what they mean, or None when it fits none of the run's measures."""
    if not cfg.assess.calibration:
        return None
    fits = [f for f in calibration.read(cfg.assess.calibration)
            if any(f.measure in d.columns for d in described.values())]
    if not fits:
        return None
    for row in rows:
        for f in fits:
            row.values[f.column] = f.apply(row.values.get(f.measure))
    return measures.Described(name=calibration.NAME, columns={f.column: f.meaning() for f in fits},
                              paper="ITU-T P.808 listening tests of this team's own listeners",
                              better="higher", comparable="the listening test each column names, only",
                              derived={f.column: f.measure for f in fits})


def environment(cfg: Config) -> dict:
    """The calibration's content, which a path alone does not name."""
    path = cfg.assess.calibration
    return {"calibration_sha256": store.sha256_or_none(path)} if path else {}


STAGE = Stage("assess", "each speech row scored by each selected measure (naturalness, speaker similarity, "
              "distance from a natural recording), every utterance alone", reads=("speech", "sentences"),
              optional=("references",), makes=("measures",), config=("assess",), run=run, models=models, environment=environment)
