"""synthesize: sentences → one wav per (sentence, voice, condition) under audio/<run>/.

Each wav has a JSON sidecar with its key (text and settings), the wav's sha256 and size, duration, synthesis time
and status. A wav is reused only when its sidecar matches the current text and settings and the wav on disk
still has the recorded sha256, so a killed run redoes only the item in flight and a torn wav is made again."""
from __future__ import annotations

import logging
from pathlib import Path

from pipeline import audio, conditions, executor, paths, progress, store
from pipeline.config import Config
from pipeline.stages import sample
from pipeline.workers import Speaker

log = logging.getLogger(__name__)
COLUMNS = ["sentence_id", "voice", "condition", "audio_path", "audio_seconds", "tts_seconds", "status", "error"]


def table_path(cfg: Config) -> Path:
    return paths.run_dir(cfg) / "synthesis.csv"


def key(cfg: Config) -> dict:
    s = cfg.speech
    return {"voices": s.voices, "conditions": s.conditions, "voice_noise": s.voice_noise, "seed": s.seed,
            "sentences": store.sha256_file(sample.sentences_path(cfg))}


def outputs(cfg: Config) -> list:
    """The table and every wav it names: a wav damaged after the run makes the stage run again."""
    table = table_path(cfg)
    wavs = dict.fromkeys(r["audio_path"] for r in store.read_csv(table) if r["audio_path"]) if table.exists() else {}
    return [table, *wavs]


def wav_path(cfg: Config, voice: str, condition: str, sentence_id: str) -> Path:
    return paths.audio_dir(cfg) / paths.slug(voice) / paths.slug(condition) / f"{cfg.run}_{sentence_id}.wav"


def cached(sidecar: Path, wav: Path, item_key: str) -> dict | None:
    meta = store.read_record(sidecar)
    if meta.get("key") != item_key:
        return None
    if meta["status"] == "ok" and meta.get("wav_sha256") != store.sha256_or_none(wav):
        return None
    return meta


def written(wav: Path) -> dict:
    """What a sidecar records of its wav, so that a torn or replaced file is not taken as done."""
    return {"wav_sha256": store.sha256_stat(wav), "wav_bytes": wav.stat().st_size}


def condition_one(cfg: Config, condition: conditions.Condition, clean_wav: Path, out_wav: Path,
                  sentence_id: str, voice: str) -> None:
    samples, sr = audio.read(clean_wav)
    seed = conditions.item_seed(cfg.speech.seed, voice, condition.name, sentence_id)
    audio.write_wav(out_wav, conditions.apply(condition, samples, sr, seed), sr)


def run(cfg: Config) -> dict:
    sentences = sample.load(cfg)
    conds = [conditions.parse(c) for c in cfg.speech.conditions]
    rows, counts, files = [], {"ok": 0, "skipped": 0, "error": 0, "reused": 0}, {}
    pool = executor.make(cfg)
    try:
        for voice_name in cfg.speech.voices:
            pool.files = []
            metas = speak_all(cfg, pool, voice_name, sentences, counts, files)
            for s in sentences:
                meta = metas[s["sentence_id"]]
                counts[meta["status"]] += 1
                clean = wav_path(cfg, voice_name, "clean", s["sentence_id"])
                for cond in conds:
                    wav = clean if cond.kind == "clean" else wav_path(cfg, voice_name, cond.name, s["sentence_id"])
                    if meta["status"] == "ok" and cond.kind != "clean":
                        cond_key = store.key_of([meta["key"], cond.name, cfg.speech.seed])
                        cond_sidecar = wav.with_suffix(".json")
                        if cached(cond_sidecar, wav, cond_key) is None:
                            condition_one(cfg, cond, clean, wav, s["sentence_id"], voice_name)
                            store.write_record(cond_sidecar, {"key": cond_key, "status": "ok", **written(wav)})
                    rows.append({"sentence_id": s["sentence_id"], "voice": voice_name, "condition": cond.name,
                                 "audio_path": str(wav) if meta["status"] == "ok" else "",
                                 "audio_seconds": meta["audio_seconds"], "tts_seconds": meta["tts_seconds"],
                                 "status": meta["status"], "error": meta["error"]})
    finally:
        pool.close()
    store.write_csv(table_path(cfg), rows, COLUMNS)
    return {**counts, "files": files}


def speak_all(cfg: Config, pool, voice_name: str, sentences: list[dict], counts: dict,
              files: dict) -> dict[str, dict]:
    """Each sentence's metadata, from its sidecar when cached, else spoken now and written to disk.

    The sidecar is written after the wav, so a sidecar means a complete wav. Errors are not cached: the
    next run tries them again."""
    metas, jobs = {}, []
    for s in sentences:
        clean = wav_path(cfg, voice_name, "clean", s["sentence_id"])
        item_key = store.key_of([s["text"], voice_name, cfg.speech.voice_noise])
        meta = cached(clean.with_suffix(".json"), clean, item_key)
        if meta is not None:
            metas[s["sentence_id"]] = meta
            counts["reused"] += 1
        else:
            jobs.append(((s["sentence_id"], item_key), s["text"]))
    bar = progress.bar(total=len(jobs), desc=f"synthesize {voice_name}")
    for (sentence_id, item_key), result in pool.map(Speaker, (voice_name, {"voice_noise": cfg.speech.voice_noise}),
                                                    "speak", jobs, len(jobs)):
        clean = wav_path(cfg, voice_name, "clean", sentence_id)
        meta = {"key": item_key, **{k: result[k] for k in ("status", "error", "tts_seconds", "audio_seconds",
                                                           "node", "pid")}}
        if result["status"] == "ok":
            audio.write_wav(clean, result["samples"], result["sr"])
            meta.update(written(clean))
        if result["status"] != "error":
            store.write_record(clean.with_suffix(".json"), meta)
        metas[sentence_id] = meta
        bar.update(1)
    bar.close()
    files.update(store.file_hashes(cfg.models_dir, pool.files))
    if jobs and metas[jobs[0][0][0]]["status"] == "error" and all(metas[k[0]]["status"] == "error" for k, _ in jobs):
        log.error("%s: %s", voice_name, metas[jobs[0][0][0]]["error"])
    return metas


def load(cfg: Config) -> list[dict]:
    return store.read_csv(table_path(cfg))
