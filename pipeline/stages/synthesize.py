"""synthesize: sentences → one wav per (sentence, voice, condition) under audio/<run>/.

Each wav has a JSON sidecar with its text hash, duration, synthesis time and status. A wav whose sidecar
matches the current text and settings is reused, so a killed run redoes only the item in flight."""
from __future__ import annotations

import logging
import time
from pathlib import Path

from pipeline import audio, conditions, paths, progress, store
from pipeline.asr.weights import record
from pipeline.config import Config
from pipeline.stages import sample
from pipeline.tts import base as tts

log = logging.getLogger(__name__)
COLUMNS = ["sentence_id", "voice", "condition", "audio_path", "audio_seconds", "tts_seconds", "status", "error"]


def table_path(cfg: Config) -> Path:
    return paths.run_dir(cfg) / "synthesis.csv"


def key(cfg: Config) -> dict:
    s = cfg.speech
    return {"voices": s.voices, "conditions": s.conditions, "voice_noise": s.voice_noise, "seed": s.seed,
            "sentences": store.sha256_file(sample.sentences_path(cfg))}


def outputs(cfg: Config) -> list:
    return [table_path(cfg)]


def wav_path(cfg: Config, voice: str, condition: str, sentence_id: str) -> Path:
    return paths.audio_dir(cfg) / paths.slug(voice) / paths.slug(condition) / f"{cfg.run}_{sentence_id}.wav"


def cached(sidecar: Path, wav: Path, item_key: str) -> dict | None:
    if not sidecar.exists():
        return None
    meta = store.read_json(sidecar)
    if meta.get("key") != item_key or (meta["status"] == "ok" and not wav.exists()):
        return None
    return meta


def synthesize_one(voice, text: str, clean_wav: Path) -> dict:
    """Speak `text` into clean_wav; the status says why not when it cannot be spoken."""
    t0 = time.perf_counter()
    try:
        samples, sr = voice.synthesize(text)
    except tts.UnspeakableText as e:
        return {"status": "skipped", "error": str(e), "tts_seconds": 0.0, "audio_seconds": 0.0}
    except Exception as e:  # one bad sentence must not stop the others
        return {"status": "error", "error": f"{type(e).__name__}: {e}", "tts_seconds": 0.0, "audio_seconds": 0.0}
    seconds = time.perf_counter() - t0
    audio.write_wav(clean_wav, samples, sr)
    return {"status": "ok", "error": "", "tts_seconds": round(seconds, 4),
            "audio_seconds": round(audio.duration(samples, sr), 4)}


def condition_one(cfg: Config, condition: conditions.Condition, clean_wav: Path, out_wav: Path,
                  sentence_id: str, voice: str) -> None:
    samples, sr = audio.read(clean_wav)
    seed = conditions.item_seed(cfg.speech.seed, voice, condition.name, sentence_id)
    audio.write_wav(out_wav, conditions.apply(condition, samples, sr, seed), sr)


def run(cfg: Config) -> dict:
    sentences = sample.load(cfg)
    conds = [conditions.parse(c) for c in cfg.speech.conditions]
    rows, counts = [], {"ok": 0, "skipped": 0, "error": 0, "reused": 0}
    for voice_name in cfg.speech.voices:
        try:
            voice = tts.load(voice_name, {"voice_noise": cfg.speech.voice_noise})
            record(cfg.models_dir, voice.files())
        except tts.VoiceUnavailable as e:
            log.error("%s", e)
            voice = None
        for s in progress.bar(sentences, desc=f"synthesize {voice_name}"):
            clean = wav_path(cfg, voice_name, "clean", s["sentence_id"])
            item_key = store.key_of([s["text"], voice_name, cfg.speech.voice_noise])
            sidecar = clean.with_suffix(".json")
            meta = cached(sidecar, clean, item_key)
            if meta is not None:
                counts["reused"] += 1
            elif voice is None:
                meta = {"status": "error", "error": f"voice {voice_name} is unavailable (see the log)",
                        "tts_seconds": 0.0, "audio_seconds": 0.0}
            else:
                meta = synthesize_one(voice, s["text"], clean)
                meta["key"] = item_key
                store.write_json(sidecar, meta)  # after the wav: a sidecar means the wav is complete
            counts[meta["status"]] += 1
            for cond in conds:
                wav = clean if cond.kind == "clean" else wav_path(cfg, voice_name, cond.name, s["sentence_id"])
                if meta["status"] == "ok" and cond.kind != "clean":
                    cond_key = store.key_of([item_key, cond.name, cfg.speech.seed])
                    cond_sidecar = wav.with_suffix(".json")
                    if cached(cond_sidecar, wav, cond_key) is None:
                        condition_one(cfg, cond, clean, wav, s["sentence_id"], voice_name)
                        store.write_json(cond_sidecar, {"key": cond_key, "status": "ok"})
                rows.append({"sentence_id": s["sentence_id"], "voice": voice_name, "condition": cond.name,
                             "audio_path": str(wav) if meta["status"] == "ok" else "",
                             "audio_seconds": meta["audio_seconds"], "tts_seconds": meta["tts_seconds"],
                             "status": meta["status"], "error": meta["error"]})
    store.write_csv(table_path(cfg), rows, COLUMNS)
    return counts


def load(cfg: Config) -> list[dict]:
    return store.read_csv(table_path(cfg))
