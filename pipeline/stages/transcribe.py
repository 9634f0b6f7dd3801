"""transcribe: speech → a hypothesis per speech row × engine. Each transcript is cached as its own sealed record,
keyed by exactly what determines it: the audio's sha256, the engine, its model files' sha256 and the decoding
options (the `asr` section minus what is speed only: each utterance is decoded alone, so batch size and threads
cannot change a transcript; tests/test_invariance.py). A killed run loses at most the batch in flight."""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

from pipeline.asr import base as asr
from pipeline.asr.transcriber import Heard, Transcriber
from pipeline.config import paths
from pipeline.config.run import Config
from pipeline.core import options, records, store
from pipeline.core.manifest import Computation
from pipeline.asr.transcriber import Transcript
from pipeline.core.records import Status
from pipeline.io.speech import Speech
from pipeline.core.source import Source
from pipeline.exec import executor
from pipeline.exec.items import Item, Unusable, cached_map, tally
from pipeline.io import audio
from pipeline.run import artifacts
from pipeline.run.stage import Outcome, Stage


def decoding(cfg: Config):
    """The asr section as a recognizer gets it: a Ray actor decodes on the CPUs it was given, not on every core
    of its node."""
    if cfg.asr.threads or cfg.executor.kind != "ray":
        return cfg.asr
    return replace(cfg.asr, threads=max(1, int(cfg.executor.cpus_per_actor)))


def asr_gpus(cfg: Config) -> float:
    """GPUs a Ray ASR actor asks for: as configured, else one when the device is a GPU."""
    return cfg.executor.asr_gpus or (1.0 if cfg.device == "cuda" else 0.0)


def heard(path: str) -> tuple:
    """The 16 kHz audio for a recognizer, and what completes its Heard with what the transcript records of it."""
    try:
        samples = audio.load_16k(path)
    except audio.BadAudio as e:
        raise Unusable(str(e)) from None
    sha, level, seconds = store.sha256_or_none(path), audio.level_dbfs(samples), round(len(samples) / audio.SAMPLE_RATE, 4)
    return samples, lambda done: replace(done, audio_sha256=sha, level_dbfs=level, audio_seconds=seconds)


def models(cfg: Config) -> dict[str, Source]:
    return {engine: asr.resolve(engine, cfg.asr, cfg.models_dir) for engine in cfg.asr.engines}


def transcript_keys(cfg: Config, engine: str, model: list[str]) -> Callable[[str], str]:
    """The key of `engine`'s transcript of the audio with a given sha256, `model` being its files' hashes."""
    # the device, the compute type it runs, CTranslate2's kernel settings and the revision of the engine's own
    # arithmetic change results: they are in every transcript's key
    decode_key = {**{k: v for k, v in options.identity(cfg.asr).items() if k != "engines"}, "device": cfg.device,
                  "compute_type": asr.compute_type(cfg.asr, cfg.device), "ctranslate2": asr.backend_settings()}
    fields = [engine, model, decode_key, asr.ENGINES.revision(engine, cfg.asr)]
    return lambda sha: store.key_of([sha, *fields])


def environment(cfg: Config) -> dict:
    """What changes transcripts besides the speech, the asr config and the models: CTranslate2's kernel settings,
    and each engine's arithmetic revision, so that a revision transcribes again even where nothing else changed."""
    revisions = {e: r for e in cfg.asr.engines if (r := asr.ENGINES.revision(e, cfg.asr))}
    return {**asr.backend_settings(), **({"arithmetic": revisions} if revisions else {})}


def run(cfg: Config, loaded: dict) -> Outcome:
    speech: list[Speech] = loaded["speech"]
    sources: dict[str, Source] = loaded["models"]
    rows, files, reused, failed = [], {}, 0, 0
    with executor.make(cfg.executor) as pool:
        for engine in cfg.asr.engines:
            source = sources[engine]
            key = transcript_keys(cfg, engine, source.content(cfg.models_dir))
            items = {}
            for i, s in enumerate(speech):
                if s.status == Status.OK:
                    sha = store.sha256_or_none(s.audio_path)  # None: unreadable, and its row will say why
                    record = paths.transcript_record(cfg, asr=engine, voice=s.voice, condition=s.condition,
                                                     sentence_id=s.sentence_id)
                    k = key(sha) if sha else ""
                    items[i] = Item(k, record, lambda p=s.audio_path: heard(p),
                                    shared=paths.shared_record(cfg, "transcripts", k))
            results, cached_here = cached_map(pool, (Transcriber, (source, decoding(cfg), cfg.models_dir, cfg.device)),
                                              items, result=Heard, chunk=cfg.asr.batch_size,
                                              desc=f"transcribe {engine}", gpus=asr_gpus(cfg), noun="transcripts")
            files.update(source.hashes(cfg.models_dir))
            reused += cached_here
            failed += sum(done.status == Status.ERROR for done in results.values())
            for i, s in enumerate(speech):
                h = results.get(i) or Heard(status=s.status, error=s.error)  # not spoken: nothing to hear
                rows.append(Transcript(
                    sentence_id=s.sentence_id, voice=s.voice, condition=s.condition, asr=engine,
                    audio_path=s.audio_path,
                    audio_seconds=s.audio_seconds if h.audio_seconds is None else h.audio_seconds,
                    tts_seconds=s.tts_seconds, hypothesis=h.hypothesis, asr_seconds=h.asr_seconds, status=h.status,
                    error=h.error, audio_sha256=h.audio_sha256, level_dbfs=h.level_dbfs))
    records.write_csv(artifacts.path("transcripts", cfg), Transcript, rows)
    return Outcome(tally([r.status for r in rows], reused), files, cfg.device, failed=failed)


STAGE = Stage("transcribe", "each speech row heard by each ASR engine, every utterance decoded alone",
              reads=("speech",), makes=("transcripts",), config=("asr", "device"), run=run, models=models,
              environment=environment, computation=lambda cfg: Computation(
                  asr_decoding=asr.DECODING, ctranslate2_settings=asr.backend_settings()))
