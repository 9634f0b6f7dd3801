"""A run's manifest.json, typed: what the runner writes of a run, and what every reader of a finished run reads
(compare-runs, listen create, the listening analysis). The file keeps one JSON key per field, sealed with its own
sha256 (store.write_record), and says which version of this shape it is (`manifest_version`): a reader refuses a
newer one, and reads one written before the version was recorded as version 1, whose shape it is."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from pipeline.core import store

VERSION = 1
NAME = "manifest.json"


class NewerManifest(ValueError):
    """A manifest written by a newer version of this tool, in a shape this one does not know."""


@dataclass(frozen=True, kw_only=True)
class Seeds:
    train: int
    sample: int
    tts: int
    bootstrap: int


@dataclass(frozen=True, kw_only=True)
class Model:
    """A model as the run found it (core/source.py Source.describe): what was asked for, where it was found, and
    the sha256 of each of its files."""
    spec: str
    found: str
    path: str = ""
    files: dict[str, str] = field(default_factory=dict)
    repo: str = ""
    revision: str = ""
    multilingual: bool | None = None
    language: str = ""


@dataclass(frozen=True, kw_only=True)
class Computation:
    """What the stages record of the computation behind their outputs (Stage.computation), for a reader of the
    run; each stage sets its own fields."""
    scoring_revision: int | None = None  # score: what compare-runs checks two runs against
    asr_decoding: dict | None = None  # transcribe: the decoding every engine does
    ctranslate2_settings: dict | None = None  # transcribe: CTranslate2's kernel settings
    matmul_gflops: dict | None = None  # train: the matmul peaks the training precision was chosen from

    def merged(self, other: Computation) -> Computation:
        """These fields, with those `other` sets."""
        return replace(self, **{k: v for k, v in asdict(other).items() if v is not None})


@dataclass(kw_only=True)
class RunManifest:
    manifest_version: int = VERSION
    config: dict = field(default_factory=dict)  # the config as the run resolved it (config/run.py Config, as JSON)
    versions: dict[str, str] = field(default_factory=dict)  # the packages the run ran with
    git_commit: str | None = None
    seeds: Seeds | None = None
    executor: dict = field(default_factory=dict)  # kind, and for Ray what the cluster check found
    models: dict[str, Model] = field(default_factory=dict)  # every model the run's stages ran, by spec
    computation: Computation = field(default_factory=Computation)
    stage_status: dict[str, str] = field(default_factory=dict)  # what the last invocation did: ran, up to date, …
    stage_seconds: dict[str, float] = field(default_factory=dict)
    stage_results: dict[str, dict] = field(default_factory=dict)  # each stage's counts and figures (Outcome)
    stage_files: dict[str, dict[str, str]] = field(default_factory=dict)  # the weight files each stage read
    stage_devices: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # every weight file the run read: path → sha256
    complete: bool = False  # every stage of the run's plan up to date with its inputs
    stale_stages: list[str] = field(default_factory=list)  # the planned stages that are not
    sealed: dict[str, str] = field(default_factory=dict)  # every file the run made: path in the folder → sha256

    def setting(self, dotted: str, default: Any = None) -> Any:
        """A value of the run's config by its dotted key (`score.headline`)."""
        value: Any = self.config
        for part in dotted.split("."):
            if not isinstance(value, dict) or part not in value:
                return default
            value = value[part]
        return value

    def as_json(self) -> dict:
        """One key per field, the computation's fields among them (as the file always had them), unset ones left
        out."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("computation", "models", "seeds")}
        out["seeds"] = asdict(self.seeds) if self.seeds else None
        out["models"] = {spec: {k: v for k, v in asdict(m).items() if v not in ("", None)}
                         for spec, m in self.models.items()}
        out.update({k: v for k, v in asdict(self.computation).items() if v is not None})
        return out

    @classmethod
    def from_json(cls, data: dict) -> RunManifest:
        """A manifest as written; NewerManifest for a version this one does not know. Keys it does not know (a
        field an older version wrote) are passed over."""
        version = data.get("manifest_version", 1)
        if not isinstance(version, int) or version > VERSION:
            raise NewerManifest(f"manifest_version {version!r}: written by a newer version of this tool (this one "
                                f"reads {VERSION}); use that version, or run the command that made it again with "
                                "this one")
        known = {f.name for f in fields(cls)} - {"computation", "models", "seeds"}
        model_fields = {f.name for f in fields(Model)}
        return cls(**{k: v for k, v in data.items() if k in known},
                   seeds=Seeds(**data["seeds"]) if data.get("seeds") else None,
                   models={spec: Model(**{k: v for k, v in m.items() if k in model_fields})
                           for spec, m in (data.get("models") or {}).items()},
                   computation=Computation(**{f.name: data.get(f.name) for f in fields(Computation)}))

    def write(self, folder: Path) -> None:
        store.write_record(folder / NAME, self.as_json())

    @classmethod
    def read(cls, folder: Path) -> RunManifest:
        """The folder's manifest as its run left it, or a new one where there is none."""
        data = store.read_json_or_empty(folder / NAME)
        data.pop("record_sha256", None)
        return cls.from_json(data) if data else cls()
