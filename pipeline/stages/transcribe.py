"""transcribe: wavs → hypotheses, for every ASR engine. Each transcript is cached as its own JSON, keyed by
exactly what determines it: the audio's sha256, the engine and the decoding options. Batch size and threads
are left out because they cannot change a transcript (each utterance is decoded alone; tests/test_invariance.py).
A killed run loses at most the batch in flight."""
from __future__ import annotations

import logging
from dataclasses import asdict
from pathlib import Path

from pipeline import audio, executor, manifest, paths, progress, store
from pipeline.asr import base as asr
from pipeline.config import Config
from pipeline.workers import Listener
from pipeline.stages import synthesize

log = logging.getLogger(__name__)
COLUMNS = ["sentence_id", "voice", "condition", "asr", "audio_path", "audio_seconds", "tts_seconds",
           "hypothesis", "asr_seconds", "status", "error", "audio_sha256", "level_dbfs"]


def table_path(cfg: Config) -> Path:
    return paths.run_dir(cfg) / "transcripts.csv"


def options(cfg: Config) -> asr.Options:
    s = cfg.speech
    # A Ray actor decodes on the CPUs it was given, not on every core of its node.
    threads = s.threads or (max(1, int(cfg.executor.cpus_per_actor)) if cfg.executor.kind == "ray" else 0)
    return asr.Options(language=s.language, beam_size=s.beam_size, temperature=s.temperature,
                       condition_on_previous_text=s.condition_on_previous_text, compute_type=s.compute_type,
                       threads=threads, models_dir=cfg.models_dir)


def decoding_key(cfg: Config) -> dict:
    o = asdict(options(cfg))
    for how_fast_not_what in ("threads", "models_dir"):
        o.pop(how_fast_not_what)
    return o


def key(cfg: Config) -> dict:
    """The audio itself, not only the table naming it: a recording replaced in place is heard again."""
    source = cfg.audio_manifest or str(synthesize.table_path(cfg))
    heard = [store.sha256_or_none(i["audio_path"]) for i in items(cfg) if i["status"] == "ok"]
    return {"asr": cfg.speech.asr, "options": decoding_key(cfg), "input": store.sha256_file(source),
            "audio": store.key_of(heard)}


def outputs(cfg: Config) -> list:
    return [table_path(cfg)]


def items(cfg: Config) -> list[dict]:
    """What to transcribe: the synthesis table's rows, or the audio manifest's."""
    if cfg.audio_manifest:
        return [{"sentence_id": r["id"], "voice": "", "condition": "clean", "audio_path": r["audio_path"],
                 "audio_seconds": "", "tts_seconds": "", "status": "ok", "error": ""}
                for r in manifest.read(cfg.audio_manifest)]
    return synthesize.load(cfg)


def cache_path(cfg: Config, engine: str, item: dict) -> Path:
    parts = [paths.slug(engine), paths.slug(item["voice"] or "recordings"), paths.slug(item["condition"])]
    return paths.run_dir(cfg).joinpath("transcripts", *parts, f"{item['sentence_id']}.json")


def run(cfg: Config) -> dict:
    todo = items(cfg)
    opts, dkey = options(cfg), decoding_key(cfg)
    rows, counts, files = [], {"ok": 0, "skipped": 0, "error": 0, "reused": 0}, {}
    pool = executor.make(cfg)
    try:
        for engine in cfg.speech.asr:
            pool.files = []
            transcribe_engine(cfg, pool, engine, opts, dkey, todo, rows, counts)
            files.update(store.file_hashes(cfg.models_dir, pool.files))
    finally:
        pool.close()
    store.write_csv(table_path(cfg), rows, COLUMNS)
    return {**counts, "files": files}


def transcribe_engine(cfg: Config, pool, engine: str, opts: asr.Options, dkey: dict, todo: list[dict],
                      rows: list[dict], counts: dict) -> None:
    """Rows for one engine: cached transcripts are reused, the rest transcribed."""
    results: dict[int, dict] = {}
    pending: list[tuple[int, str]] = []  # (index, item key)
    for i, item in enumerate(todo):
        if item["status"] != "ok":
            results[i] = {"hypothesis": "", "asr_seconds": "", "status": item["status"], "error": item["error"]}
            continue
        sha = store.sha256_or_none(item["audio_path"])  # None: unreadable, and its row will say why
        item_key = store.key_of([sha, engine, dkey]) if sha else ""
        cached = cache_path(cfg, engine, item)
        previous = store.read_record(cached) if item_key else {}
        if previous.get("key") == item_key and item_key:
            results[i] = previous
            counts["reused"] += 1
        else:
            pending.append((i, item_key))
    if pending:
        results.update(transcribe_pending(cfg, pool, engine, opts, todo, pending))
    for i, item in enumerate(todo):
        r = results[i]
        counts[r["status"]] += 1
        heard = {k: r[k] for k in ("audio_sha256", "level_dbfs", "audio_seconds") if r.get(k, "") != ""}
        rows.append({**{k: item.get(k, "") for k in COLUMNS}, "asr": engine, "hypothesis": r["hypothesis"],
                     "asr_seconds": r["asr_seconds"], "status": r["status"], "error": r["error"], **heard})


def transcribe_pending(cfg: Config, pool, engine: str, opts: asr.Options, todo: list[dict],
                       pending: list[tuple[int, str]]) -> dict[int, dict]:
    """Transcribe the pending items batch by batch; each result is cached as it arrives."""
    results: dict[int, dict] = {}
    size = cfg.speech.batch_size
    chunks = [pending[k:k + size] for k in range(0, len(pending), size)]

    def jobs():  # audio is read only when a worker is free for it: memory stays flat
        for chunk in chunks:
            arrays, ready = [], []
            for i, item_key in chunk:
                path = todo[i]["audio_path"]
                try:
                    samples = audio.load_16k(path)
                except audio.BadAudio as e:
                    results[i] = {"hypothesis": "", "asr_seconds": "", "status": "error", "error": str(e)}
                    continue
                arrays.append(samples)
                ready.append((i, {"key": item_key, "audio_sha256": store.sha256_or_none(path),
                                  "audio_seconds": round(len(samples) / audio.WHISPER_RATE, 4),
                                  "level_dbfs": audio.level_dbfs(samples)}))
            yield ready, arrays

    bar = progress.bar(total=len(pending), desc=f"transcribe {engine}")
    for ready, outcome in pool.map(Listener, (engine, opts), "transcribe", jobs(), len(chunks)):
        for (i, heard), result in zip(ready, outcome):
            result = {**heard, **result}
            if result["status"] == "ok":
                store.write_record(cache_path(cfg, engine, todo[i]), result)
            results[i] = result
        bar.update(len(ready))
    bar.close()
    failed = [r["error"] for r in results.values() if r["status"] == "error"]
    if failed and len(failed) == len(pending):
        log.error("%s: %s", engine, failed[0])
    return results


def load(cfg: Config) -> list[dict]:
    return store.read_csv(table_path(cfg))
