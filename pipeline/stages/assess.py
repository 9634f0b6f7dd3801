"""assess: speech → measures.csv: each selected measure (pipeline/measures/: DNSMOS, speaker similarity, …) of each
speech row, on the 16 kHz audio the ASR hears, each utterance alone.

Each score is cached as a sealed record keyed by exactly what determines it: the audio's sha256, the measure, its
model files' sha256 and the speaker reference's sha256 where the measure uses one. A measure never sees a
transcript, so it cannot change one. Embeddings (Resemblyzer's) go to embeddings.npz, for each voice's consistency
and the similarity between voices (scoring/measures.py)."""
from __future__ import annotations

import io
from dataclasses import replace

import numpy as np

from pipeline.config import paths
from pipeline.config.run import Config
from pipeline.core import records, store
from pipeline.io.speech import Speech
from pipeline.measures.assessor import Measured
from pipeline.core.source import Source
from pipeline.exec import executor
from pipeline.exec.items import Item, Unusable, cached_map, tally
from pipeline.io import audio
from pipeline.measures import base as measures
from pipeline.measures import calibration
from pipeline.measures.assessor import Assessed, Assessor
from pipeline.run import artifacts
from pipeline.run.stage import Outcome, Stage


def models(cfg: Config) -> dict[str, Source]:
    return {name: measures.MEASURES.get(name).source() for name in measures.selected(cfg.assess)}




def heard(path: str, reference: str) -> tuple:
    """A measure's input: the audio at 16 kHz, the speaker reference at 16 kHz (None when the row has none or it
    cannot be read: the row then says why, naming the file), and that note; and what completes its Assessed."""
    try:
        samples = audio.load_16k(path)
    except audio.BadAudio as e:
        raise Unusable(str(e)) from None
    ref, note = None, ""
    if reference:
        try:
            ref = audio.load_16k(reference)
        except audio.BadAudio as e:
            note = f"speaker reference unusable: {e}"
    sha = store.sha256_or_none(path) or ""
    return (samples, ref, note), lambda done: replace(done, audio_sha256=sha)


def run(cfg: Config, loaded: dict) -> Outcome:
    speech: list[Speech] = [s for s in loaded["speech"] if s.status == "ok"]
    sources: dict[str, Source] = loaded["models"]
    values: dict[int, dict] = {i: {} for i in range(len(speech))}
    notes: dict[int, list[str]] = {i: [] for i in range(len(speech))}
    status = {i: "ok" for i in range(len(speech))}
    embeddings: dict[str, np.ndarray] = {}
    files, reused, failed = {}, 0, 0
    by_voice = dict(measures.reference_pair(p) for p in cfg.assess.speaker_references)
    with executor.make(cfg.executor) as pool:
        for name, source in sources.items():
            declared = measures.MEASURES.get(name)
            model = source.content(cfg.models_dir)
            items = {}
            for i, s in enumerate(speech):
                # a row's own speaker reference (a manifest column), else its voice's from the config
                reference = (s.speaker_reference or by_voice.get(s.voice, "")) \
                    if measures.SPEAKER_REFERENCE in declared.needs else ""
                sha = store.sha256_or_none(s.audio_path)
                ref_sha = store.sha256_or_none(reference) if reference else None
                key = store.key_of([sha, name, model, ref_sha]) if sha else ""
                record = paths.measure_record(cfg, measure=name, voice=s.voice, condition=s.condition,
                                              sentence_id=s.sentence_id)
                items[i] = Item(key, record, lambda p=s.audio_path, r=reference: heard(p, r),
                                shared=paths.shared_record(cfg, "measures", key))
            results, cached_here = cached_map(pool, (Assessor, (name, source, cfg.assess.threads)), items,
                                              result=Assessed, chunk=16, desc=f"assess {name}", noun="scores")
            files.update(source.hashes(cfg.models_dir))
            reused += cached_here
            for i, done in results.items():
                if done.status == "error":
                    failed += 1
                    status[i] = "error"
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
                     speaker_reference=s.speaker_reference or by_voice.get(s.voice, "")) for i, s in enumerate(speech)]
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
    return Outcome({**tally([r.status for r in rows], reused), "measures": list(sources)}, files, failed=failed)


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


STAGE = Stage("assess", "each speech row scored by each selected measure (naturalness, speaker similarity), "
              "every utterance alone", reads=("speech",), makes=("measures",), config=("assess",), run=run,
              models=models, environment=environment)
