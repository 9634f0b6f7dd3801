"""The run: which stages, whether each is up to date, the run lock (core/lock.py) and the manifest (core/manifest.py).

The stages are declarations (pipeline/run/stage.py), handed in by the caller (pipeline/stages/ declares
them; the command line passes them on). The only place that asks where the sentences come from is
`plan`: after the source, every stage is the same whichever source ran. A stage's key is the content of the
artifacts it reads plus the config it declares (minus what is speed only); the runner skips a stage whose key is
unchanged and whose outputs are on disk exactly as it left them (their sha256 is recorded), so a file truncated or
edited since makes the stage run again. Per-item stages (synthesis, transcription) also cache each item."""
from __future__ import annotations

import logging
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pipeline.config import paths
from pipeline.config.run import Config
from pipeline.core import lock, options, store
from pipeline.core.manifest import Model, RunManifest, Seeds
from pipeline.core.versions import git_commit, versions
from pipeline.errors import ConfigError
from pipeline.exec import interrupts
from pipeline.exec.progress import say
from pipeline.run.artifacts import ARTIFACTS
from pipeline.run.stage import Stage

log = logging.getLogger("pipeline")

class MissingInput(RuntimeError):
    """A stage's input does not exist: an earlier stage has not run."""


def plan(cfg: Config, declared: list[Stage]) -> list[Stage]:
    """Of the declared stages (pipeline/stages/, in order), the source this config names (the LM's corpus, a
    sentences file or recordings), then every stage whose inputs the stages before it made and whose artifacts
    none of them made."""
    made: set[str] = set()
    chosen = []
    for stage in declared:
        if stage.runs_when is not None:
            runs = stage.runs_when(cfg)
        else:
            runs = set(stage.reads) <= made and not set(stage.makes) <= made
        if runs:
            chosen.append(stage)
            made.update(stage.makes)
    return chosen


def describe(cfg: Config, declared: list[Stage], stages: list[str] | None = None, start: str | None = None) -> str:
    """The plan as a reader follows it: each stage the run executes (`stages`, `start`: as `select` takes them)
    with what it reads and makes, and the config it depends on."""
    lines = []
    chosen = select(cfg, declared, stages, start)
    skipped = [s.name for s in plan(cfg, declared) if s not in chosen]
    if skipped:
        lines.append(f"(left out by --stages/--from, what they made used as it stands: {', '.join(skipped)})")
    for stage in chosen:
        reads = ", ".join([*stage.reads, *(f"{n} (if any)" for n in stage.optional)])
        lines.append(f"{stage.name}: {stage.doc}")
        lines.append(f"    reads  {reads}")
        lines.append("    makes  " + ", ".join(f"{n} ({ARTIFACTS[n].path(cfg)})" for n in stage.makes))
        lines.append(f"    config {', '.join(stage.config) or '-'}")
    return "\n".join(lines)


def select(cfg: Config, declared: list[Stage], stages: list[str] | None = None,
           start: str | None = None) -> list[Stage]:
    """The stages this run executes, in order."""
    chosen = plan(cfg, declared)
    names = [s.name for s in chosen]
    for name in [start] if start else stages or []:
        if name not in names:
            raise ConfigError(f"stage {name!r} is not part of this run: its stages are {', '.join(names)}")
    if start:
        chosen = chosen[names.index(start):]
    if stages:
        chosen = [s for s in chosen if s.name in stages]
    return chosen


def config_of(cfg: Config, keys: tuple[str, ...]) -> dict:
    """The declared config, minus what only changes speed."""
    out: dict[str, Any] = {}
    for key in keys:
        value: Any = cfg
        for part in key.split("."):
            value = getattr(value, part)
        out[key] = options.identity(value) if hasattr(value, "__dataclass_fields__") else value
    return out


def maker(name: str, planned: list[Stage]) -> str | None:
    return next((s.name for s in planned if name in s.makes), None)


def resolve_models(cfg: Config, stages: list[Stage]) -> dict[str, dict]:
    """Every model the stages run, found before any of them runs: a model that is nowhere is exit 2 now, not
    after an hour of training, with every stage's problem in one message (a voice and an engine that cannot speak
    or hear the run's language are both named). {stage name: {spec: Source}}."""
    found, problems = {}, []
    for stage in stages:
        if stage.models:
            try:
                found[stage.name] = stage.models(cfg)
            except ConfigError as e:
                problems.append(e)
    if len(problems) > 1:
        raise ConfigError("\n".join(str(e) for e in problems))
    if problems:
        raise problems[0]
    return found


def stage_key(cfg: Config, stage: Stage, models: dict | None = None, planned: list[Stage] = ()) -> str:
    contents = {}
    for name in stage.reads + stage.optional:
        contents[name] = ARTIFACTS[name].content(cfg)
        if contents[name] is None and name in stage.reads:
            first = maker(name, planned)
            fix = (f"run {first} first: --from {first} without --stages, {first} added to --stages, or neither flag"
                   if first else "it is this run's input: check its path")
            raise MissingInput(f"stage {stage.name} needs {name} ({ARTIFACTS[name].path(cfg)}), which does not "
                               f"exist yet; {fix}")
    key = {"inputs": contents, "config": config_of(cfg, stage.config),
           "models": {spec: source.content(cfg.models_dir) for spec, source in (models or {}).items()},
           "environment": stage.environment(cfg) if stage.environment else {}}
    return store.key_of(key)


def outputs(cfg: Config, stage: Stage) -> dict[str, str | None]:
    return {str(p): store.sha256_or_none(p) for name in stage.makes for p in ARTIFACTS[name].files(cfg)}


def stale(cfg: Config, stage: Stage, state_dir: Path, models: dict | None = None,
          planned: list[Stage] = ()) -> tuple[str, str]:
    """Why the stage must run ("" when it is up to date), and its key."""
    key = stage_key(cfg, stage, models, planned)
    recorded = store.read_json_or_empty(state_dir / f"{stage.name}.json")
    if recorded.get("key") != key or recorded.get("outputs") != outputs(cfg, stage):
        return "running", key
    if recorded.get("failed"):
        return f"trying again the {recorded['failed']} items that failed last time", key
    return "", key


def described(cfg: Config, planned: list[Stage]) -> dict:
    """What the run's stages read: the user's inputs (the artifacts no stage makes) and the config they depend on,
    as a report shows the run: a run of recordings shows no voices and no LM."""
    made = {name for stage in planned for name in stage.makes}
    inputs = {name: str(ARTIFACTS[name].path(cfg)) for stage in planned for name in stage.reads if name not in made}
    keys = tuple(dict.fromkeys(key for stage in planned for key in stage.config))
    return {"inputs": inputs, "config": config_of(cfg, keys)}


def load_inputs(cfg: Config, stage: Stage, models: dict | None = None, planned: list[Stage] = ()) -> dict[str, Any]:
    loaded: dict[str, Any] = {name: ARTIFACTS[name].load(cfg) for name in stage.reads}
    loaded["plan"] = described(cfg, list(planned))
    if stage.models:
        loaded["models"] = models
    for name in stage.optional:
        loaded[name] = ARTIFACTS[name].load(cfg) if ARTIFACTS[name].exists(cfg) else None
    return loaded


def setup_logging(run_dir: Path) -> None:
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    for h in list(root.handlers):
        if getattr(h, "_pipeline", False):
            root.removeHandler(h)
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S")
    for handler in (logging.StreamHandler(sys.stderr), logging.FileHandler(run_dir / "run.log")):
        handler.setFormatter(fmt)
        handler._pipeline = True
        root.addHandler(handler)


def current(cfg: Config, stage: Stage, state_dir: Path, planned: list[Stage]) -> bool:
    """Whether a stage this invocation did not select is still as its last run left it: its key, from its inputs
    and config now, and its outputs on disk are the ones it recorded (items it failed do not count: they are its
    result until their cause is mended)."""
    try:
        key = stage_key(cfg, stage, resolve_models(cfg, [stage]).get(stage.name), planned)
    except (MissingInput, ConfigError):
        return False
    recorded = store.read_json_or_empty(state_dir / f"{stage.name}.json")
    return recorded.get("key") == key and recorded.get("outputs") == outputs(cfg, stage)


def seal(cfg: Config, planned: list[Stage]) -> dict[str, str]:
    """The sha256 of every file the planned stages made in the run folder, by its path there: what compare-runs
    checks a run's files against, wherever the folder was copied."""
    run_dir = paths.run_dir(cfg)
    out = {}
    for stage in planned:
        for name in stage.makes:
            for path in ARTIFACTS[name].files(cfg):
                if Path(path).is_relative_to(run_dir) and (sha := store.sha256_or_none(path)):
                    out[Path(path).relative_to(run_dir).as_posix()] = sha
    return out


def run(cfg: Config, declared: list[Stage], stages: list[str] | None = None, start: str | None = None,
        force: bool = False) -> int:
    """Run the selected stages of the declared ones; returns the exit code: 1 when a stage's last result has rows
    that failed, else 0.

    The manifest says whether the run is complete (every stage of its plan up to date with its inputs) and seals
    the files the stages made (their sha256), itself sealed with its own: a run stopped half way, run in part, or
    edited since is told apart from a finished one."""
    run_dir = paths.run_dir(cfg)
    with lock.writing(run_dir):
        setup_logging(run_dir)
        state_dir = run_dir / ".stages"
        manifest = RunManifest.read(run_dir)
        planned = plan(cfg, declared)
        manifest.config, manifest.versions, manifest.git_commit = asdict(cfg), versions(), git_commit()
        manifest.seeds = Seeds(train=cfg.train.seed, sample=cfg.sample.seed, tts=cfg.tts.seed,
                               bootstrap=cfg.score.seed)
        manifest.complete = False
        for stage in planned:
            if stage.computation:
                manifest.computation = manifest.computation.merged(stage.computation(cfg))
        if cfg.executor.kind == "ray":  # before any work: a cluster open to anyone is refused here
            from pipeline.exec import ray_auth

            manifest.executor = ray_auth.check(cfg.executor)
        else:
            manifest.executor = {"kind": cfg.executor.kind}
        chosen = select(cfg, declared, stages, start)
        models = resolve_models(cfg, chosen)
        manifest.models.update({spec: Model(**source.describe(cfg.models_dir))
                                for found in models.values() for spec, source in found.items()})
        manifest.stage_status = {}  # what this invocation did with each stage it selected
        manifest.write(run_dir)  # from now until the end, the run is not complete
        for stage in chosen:
            interrupts.check()
            name = stage.name
            why, key = stale(cfg, stage, state_dir, models.get(name), planned)
            if not (why or force):
                log.info("%s: up to date", name)
                manifest.stage_status[name] = "up to date"
                continue
            manifest.stage_status[name] = "running"
            log.info("%s: %s", name, why or "running")
            t0 = time.perf_counter()
            try:
                result = stage.run(cfg, load_inputs(cfg, stage, models.get(name), planned))
            except KeyboardInterrupt as stop:
                raise interrupts.interrupted(stop).where(stage=name) from None
            manifest.stage_seconds[name] = round(time.perf_counter() - t0, 3)
            # A rerun replaces what the stage used before; one that only reused cached items loaded no model.
            manifest.stage_files[name] = result.model_files or manifest.stage_files.get(name, {})
            manifest.stage_results[name] = {**result.summary,
                                            **({"failed_rows": result.failed_rows} if result.failed_rows else {})}
            if result.device:
                manifest.stage_devices[name] = result.device
            manifest.stage_status[name] = "ran"
            state = {"key": key, "outputs": outputs(cfg, stage)}
            if result.failed:
                state["failed"] = result.failed
            store.write_json(state_dir / f"{name}.json", state)
            manifest.write(run_dir)
            log.info("%s: done in %.1f s", name, manifest.stage_seconds[name])
        manifest.files = {path: sha for stage in declared
                          for path, sha in manifest.stage_files.get(stage.name, {}).items()}
        behind = [s.name for s in planned if s not in chosen and not current(cfg, s, state_dir, planned)]
        manifest.complete, manifest.stale_stages, manifest.sealed = not behind, behind, seal(cfg, planned)
        manifest.write(run_dir)
        for stage in chosen:
            if stage.epilogue:
                say(stage.epilogue(cfg), sys.stdout, logging.INFO)
        # the exit code covers every row of the run, also those scored by an earlier invocation
        return 1 if any(manifest.stage_results.get(s.name, {}).get("failed_rows") for s in planned) else 0
