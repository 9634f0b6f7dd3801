"""synthesize: sentences → a wav per sentence × voice × condition, and the table naming them.

Each clean wav is spoken once per (text, voice, its model files' sha256, voice options) and kept with a sealed record of its key and
sha256 (pipeline/exec/items.py); a condition's wav is made from the clean one with a seed of its own, and recorded the
same way. A killed run redoes only the items in flight; a torn or replaced wav is made again."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pipeline.config import paths
from pipeline.config.run import Config
from pipeline.core import records, store
from pipeline.core.records import Status
from pipeline.io.speech import Speech
from pipeline.lm.sentences import Sentence
from pipeline.core.source import Source
from pipeline.errors import ConfigError
from pipeline.exec import executor
from pipeline.exec.items import Item, as_is, cached, cached_map, tally, written
from pipeline.io import audio, conditions
from pipeline.run import artifacts
from pipeline.run.stage import Outcome, Stage
from pipeline.scoring import language
from pipeline.tts import base as tts
from pipeline.tts import espeak
from pipeline.tts.speaker import Speaker, Spoken


def models(cfg: Config) -> dict[str, Source]:
    found = {voice: tts.resolve(voice, cfg.tts, cfg.models_dir) for voice in cfg.tts.voices}
    for source in found.values():
        speaks(source, cfg.asr.language)
    return found


def speaks(source: Source, lang: str) -> None:
    """A voice that declares its language speaks only the run's: an English voice reading Chinese gives a CER of
    the voice, not of anything a user asked about (the run is refused, as an English-only ASR model is)."""
    if not source.language or language.same(source.language, lang):
        return
    own = espeak.voices_of(language.voice_code(lang))
    raise ConfigError(f"tts.voices: {source.spec} speaks {source.language}, and this run's sentences are in {lang} "
                      f"(--language); give a voice of {lang}" + (f", e.g. espeak:{own[0]}" if own else "") +
                      f" (in a command of several languages, as {lang}=VOICE), or run it in --language "
                      f"{language.base(source.language)}")


def run(cfg: Config, loaded: dict) -> Outcome:
    sentences: list[Sentence] = loaded["sentences"]
    conds = [conditions.parse(c) for c in cfg.tts.conditions]
    rows, statuses, files, reused, failed = [], [], {}, 0, 0
    with executor.make(cfg.executor) as pool:
        for voice in cfg.tts.voices:
            source = loaded["models"][voice]
            items = clean_items(cfg, source, sentences)
            spoken, cached_here = speak_all(cfg, pool, source, items)
            files.update(source.hashes(cfg.models_dir))
            reused += cached_here
            failed += sum(done.status == Status.ERROR for done in spoken.values())
            for s in sentences:
                done = spoken[s.sentence_id]
                statuses.append(done.status)
                for cond in conds:
                    wav = paths.wav(cfg, voice=voice, condition=cond.name, sentence_id=s.sentence_id)
                    if done.status == Status.OK and cond.kind != "clean":
                        condition_one(cfg, cond, items[s.sentence_id], wav, s.sentence_id, voice)
                    rows.append(Speech(sentence_id=s.sentence_id, voice=voice, condition=cond.name,
                                       audio_path=str(wav) if done.status == Status.OK else "",
                                       audio_seconds=done.audio_seconds, tts_seconds=done.tts_seconds,
                                       status=done.status, error=done.error))
    records.write_csv(artifacts.path("speech", cfg), Speech, rows)
    return Outcome(tally(statuses, reused), files, failed=failed)


def condition_one(cfg: Config, cond: conditions.Condition, clean: Item, wav: Path, sentence_id: str,
                  voice: str) -> None:
    item = Item(store.key_of([clean.key, cond.name, cfg.tts.seed]), wav.with_suffix(".json"), lambda: (None, as_is), wav)
    if cached(item) is None:
        samples, sr = audio.read(clean.output)
        seed = conditions.item_seed(cfg.tts.seed, voice, cond.name, sentence_id)
        audio.write_wav(wav, conditions.apply(cond, samples, sr, seed), sr)
        store.write_record(item.record, {"key": item.key, "status": Status.OK, **written(wav)})


def clean_items(cfg: Config, source: Source, sentences: list[Sentence]) -> dict[str, Item]:
    """Each sentence's clean wav for this voice, keyed by what the voice's output depends on."""
    voice, model = source.spec, source.content(cfg.models_dir)
    items = {}
    for s in sentences:
        clean = paths.wav(cfg, voice=voice, condition="clean", sentence_id=s.sentence_id)
        items[s.sentence_id] = Item(store.key_of([s.text, voice, model, cfg.tts.voice_noise]),
                                    clean.with_suffix(".json"), lambda text=s.text: (text, as_is), clean)
    return items


def speak_all(cfg: Config, pool, source: Source, items: dict[str, Item]) -> tuple[dict[str, Spoken], int]:
    """Each sentence as this voice spoke it, from its cache or spoken now."""
    def save(sentence_id: str, done: Spoken) -> Spoken:
        if done.status != Status.OK:
            return done
        clean = items[sentence_id].output
        audio.write_wav(clean, done.samples, done.sr)
        return replace(done, samples=None, **written(clean))

    return cached_map(pool, (Speaker, (source, cfg.tts)), items, result=Spoken, chunk=1,
                      desc=f"synthesize {source.spec}", save=save, noun="wavs")


STAGE = Stage("synthesize", "each sentence spoken by each voice, in each condition",
              reads=("sentences",), makes=("speech",), config=("tts",), run=run, models=models)
