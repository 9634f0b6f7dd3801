"""recordings (the audio-manifest source): the user's recordings and their references, as the sentences and
speech that synthesis would otherwise make. Each system named in the manifest is a voice of the run. A recording
heard as is keeps its own path; a segment of a file (Kaldi segments, a NeMo offset) and every condition other than
clean are written as wavs of the run, each cached under exactly what made it (the source's sha256, the cut, the
condition and its seed), as synthesis caches a condition's wav."""
from __future__ import annotations

import logging
from pathlib import Path

from pipeline.config import paths
from pipeline.config.run import Config
from pipeline.core import records, store
from pipeline.core.records import Status
from pipeline.io.speech import Speech
from pipeline.exec.items import Item, as_is, cached, written
from pipeline.io import audio, conditions
from pipeline.io.manifests import Manifest, Recording, Unused
from pipeline.lm import sentences
from pipeline.run import artifacts
from pipeline.run.stage import Outcome, Stage
from pipeline.scoring import language

log = logging.getLogger(__name__)
NAMED = 10  # unused lines named on the terminal; the manifest's stage result counts them all


def run(cfg: Config, loaded: dict) -> Outcome:
    manifest: Manifest = loaded["audio_manifest"]
    recordings, elsewhere = in_language(cfg, manifest)
    unused = [*manifest.unused, *elsewhere]
    if unused:
        log.warning("--audio-manifest %s: %d line(s) or file(s) not used:\n  %s%s", manifest.path,
                    len(unused), "\n  ".join(map(str, unused[:NAMED])),
                    f"\n  … and {len(unused) - NAMED} more" if len(unused) > NAMED else "")
    references = {r.id: r.reference for r in recordings}
    n = sentences.write(*artifacts.sentence_tables(cfg), loaded["lm"],
                        [(uid, None, text) for uid, text in references.items()], device=cfg.device,
                        prompt=cfg.sample.start, warn_without_lm=False)
    conds = [conditions.parse(c) for c in cfg.tts.conditions]
    rows = [row for r in recordings for row in speech(cfg, r, conds)]
    records.write_csv(artifacts.path("speech", cfg), Speech, rows)
    systems = {r.system for r in recordings if r.system}
    return Outcome({"sentences": n, "recordings": len(recordings), **({"systems": len(systems)} if systems else {}),
                   **({"unused": [str(u) for u in unused]} if unused else {})},
                  failed=sum(row.status == Status.ERROR for row in rows))


def in_language(cfg: Config, manifest: Manifest) -> tuple[list[Recording], list[Unused]]:
    """The recordings in this run's language, and those a command in several languages gives to another of its
    runs (config `languages`, cli/several.py). A row that names no language is this run's."""
    if not cfg.languages:
        return manifest.recordings, []
    own = language.base(cfg.asr.language)
    mine, theirs = [], []
    for r in manifest.recordings:
        (mine if not r.language or language.base(r.language) == own else theirs).append(r)
    return mine, [Unused(str(manifest.path), None, r.id, f"in {r.language}: its language's run scores it")
                  for r in theirs]


def speech(cfg: Config, r: Recording, conds: list[conditions.Condition]) -> list[Speech]:
    """The recording's speech row in each condition."""
    def row(condition: str, path: str = "", error: str = "") -> Speech:
        return Speech(sentence_id=r.id, voice=r.system, condition=condition, audio_path=path, audio_seconds=None,
                      tts_seconds=None, status=Status.ERROR if error else "ok", error=error,
                      speaker_reference=r.speaker_reference, natural=r.natural)

    if r.problem:
        return [row(c.name, error=r.problem) for c in conds]
    if not Path(r.audio_path).is_file():  # the row keeps the path it expected, to say where to put the file
        return [row(c.name, r.audio_path, error=f"{r.audio_path}: no such audio file") for c in conds]
    if not r.cut and all(c.kind == "clean" for c in conds):
        return [row(c.name, r.audio_path) for c in conds]  # heard as given: its row says if it cannot be read
    out = []
    try:
        source = store.sha256_file(r.audio_path) if Path(r.audio_path).is_file() else None
        if source is None:
            audio.read(r.audio_path)  # raises BadAudio naming the file and what is wrong
        clean = wav_of(cfg, r, "clean", [source, r.offset, r.duration], lambda: cut(r), keep=r.cut)
        for c in conds:
            if c.kind == "clean":
                out.append(row(c.name, str(clean or r.audio_path)))
                continue
            seed = conditions.item_seed(cfg.tts.seed, r.system, c.name, r.id)
            made = wav_of(cfg, r, c.name, [source, r.offset, r.duration, c.name, cfg.tts.seed],
                          lambda c=c, seed=seed: conditioned(r, c, seed))
            out.append(row(c.name, str(made)))
    except audio.BadAudio as e:
        return [row(c.name, error=str(e)) for c in conds]
    return out


def cut(r: Recording):
    """The recording's samples (its segment, where it is one) and their rate."""
    samples, sr = audio.read(r.audio_path)
    start = round(r.offset * sr)
    stop = len(samples) if r.duration is None else start + round(r.duration * sr)
    if start >= len(samples):
        raise audio.BadAudio(f"{r.audio_path}: the segment of {r.id!r} starts at {r.offset:g} s, after the "
                             f"recording's end ({len(samples) / sr:g} s)")
    return samples[start:stop], sr


def conditioned(r: Recording, condition: conditions.Condition, seed: int):
    samples, sr = cut(r)
    return conditions.apply(condition, samples, sr, seed), sr


def wav_of(cfg: Config, r: Recording, condition: str, key: list, make, keep: bool = True) -> Path | None:
    """The run's wav of this recording in this condition, made once per key; None for the clean recording
    heard from its own file."""
    if not keep:
        return None
    wav = paths.wav(cfg, voice=r.system or "recordings", condition=condition, sentence_id=r.id)
    item = Item(store.key_of(key), wav.with_suffix(".json"), lambda: (None, as_is), wav)
    if cached(item) is None:
        samples, sr = make()
        audio.write_wav(wav, samples, sr)
        store.write_record(item.record, {"key": item.key, "status": Status.OK, **written(wav)})
    return wav


STAGE = Stage("recordings", "the user's recordings and their references, in each condition",
              reads=("audio_manifest",), optional=("lm",), makes=("sentences", "speech"),
              config=("sample.start", "device", "tts.conditions", "tts.seed", "asr.language", "languages"),
              run=run, runs_when=lambda cfg: bool(cfg.audio_manifest))
