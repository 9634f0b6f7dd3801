"""synthesize: sentences → a wav per sentence × voice × condition, and the table naming them.

Each clean wav is spoken once per (text, voice, its model files' sha256, voice options) and kept with a sealed record of its key and
sha256 (pipeline/items.py); a condition's wav is made from the clean one with a seed of its own, and recorded the
same way. A killed run redoes only the items in flight; a torn or replaced wav is made again."""
from __future__ import annotations

from pathlib import Path

from pipeline import artifacts, audio, conditions, executor, paths, records, store
from pipeline.config import Config
from pipeline.items import Item, cached, cached_map, tally, written
from pipeline.records import Sentence, Speech
from pipeline.source import Source
from pipeline.stage import Result, Stage
from pipeline.tts import base as tts
from pipeline.workers import Speaker


def wav_path(cfg: Config, voice: str, condition: str, sentence_id: str) -> Path:
    return paths.audio_dir(cfg) / paths.slug(voice) / paths.slug(condition) / f"{cfg.run}_{sentence_id}.wav"


def models(cfg: Config) -> dict[str, Source]:
    return {voice: tts.resolve(voice, cfg.tts, cfg.models_dir) for voice in cfg.tts.voices}


def run(cfg: Config, loaded: dict) -> Result:
    sentences: list[Sentence] = loaded["sentences"]
    conds = [conditions.parse(c) for c in cfg.tts.conditions]
    rows, statuses, files, reused = [], [], {}, 0
    with executor.make(cfg.executor) as pool:
        for voice in cfg.tts.voices:
            source = loaded["models"][voice]
            metas, cached_here = speak_all(cfg, pool, source, sentences)
            files.update(source.hashes(cfg.models_dir))
            reused += cached_here
            for s in sentences:
                meta = metas[s.sentence_id]
                statuses.append(meta["status"])
                for cond in conds:
                    wav = wav_path(cfg, voice, cond.name, s.sentence_id)
                    if meta["status"] == "ok" and cond.kind != "clean":
                        condition_one(cfg, cond, meta["key"], wav_path(cfg, voice, "clean", s.sentence_id), wav,
                                      s.sentence_id, voice)
                    rows.append(Speech(s.sentence_id, voice, cond.name, str(wav) if meta["status"] == "ok" else "",
                                       meta["audio_seconds"], meta["tts_seconds"], meta["status"], meta["error"]))
    records.write_csv(artifacts.path("speech", cfg), Speech, rows)
    return Result(tally(statuses, reused), files)


def condition_one(cfg: Config, cond: conditions.Condition, clean_key: str, clean: Path, wav: Path,
                  sentence_id: str, voice: str) -> None:
    item = Item(store.key_of([clean_key, cond.name, cfg.tts.seed]), wav.with_suffix(".json"), lambda: (None, {}), wav)
    if cached(item) is None:
        samples, sr = audio.read(clean)
        seed = conditions.item_seed(cfg.tts.seed, voice, cond.name, sentence_id)
        audio.write_wav(wav, conditions.apply(cond, samples, sr, seed), sr)
        store.write_record(item.record, {"key": item.key, "status": "ok", **written(wav)})


def speak_all(cfg: Config, pool, source: Source, sentences: list[Sentence]) -> tuple[dict[str, dict], int]:
    """Each sentence's record for this voice, from its cache or spoken now."""
    voice, model = source.spec, source.content(cfg.models_dir)
    items = {}
    for s in sentences:
        clean = wav_path(cfg, voice, "clean", s.sentence_id)
        items[s.sentence_id] = Item(store.key_of([s.text, voice, model, cfg.tts.voice_noise]),
                                    clean.with_suffix(".json"), lambda text=s.text: (text, {}), clean)

    def save(sentence_id: str, result: dict) -> dict:
        record = {k: result[k] for k in ("key", "status", "error", "tts_seconds", "audio_seconds", "node", "pid")}
        if result["status"] == "ok":
            clean = wav_path(cfg, voice, "clean", sentence_id)
            audio.write_wav(clean, result["samples"], result["sr"])
            record.update(written(clean))
        return record

    return cached_map(pool, (Speaker, (source, cfg.tts)), "speak", items, chunk=1, desc=f"synthesize {voice}",
                      save=save, noun="wavs")


STAGE = Stage("synthesize", "each sentence spoken by each voice, in each condition",
              reads=("sentences",), makes=("speech",), config=("tts",), run=run, models=models)
