"""A finished run, read as the run left it: the reader every reader of a finished run uses (compare-runs'
gate, listen create, the listening analysis).

A run is its results folder: manifest.json (core/manifest.py: the config, each model's files' sha256, the scoring
revision, and the sha256 of every file the run made, sealed with its own), utterances.csv, errors.csv and
measures.json. A run is used only as the run left it: finished, and each file it is read from still the file the
run sealed (`load`); while it is read, its lock is held shared (core/lock.py), so no run rewrites it meanwhile."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline.core import records, store
from pipeline.core.manifest import NAME, NewerManifest, RunManifest
from pipeline.errors import InputError
from pipeline.measures.base import Described, described
from pipeline.scoring.utterances import ErrorEvent, Results, ScoredUtterance

READ = ("utterances.csv", "errors.csv", "measures.json")  # the files of a run that its readers read


@dataclass
class Run:
    name: str
    folder: Path
    manifest: RunManifest
    scores: Results  # its utterances and error events
    measures: dict[str, Described]  # each measure of the run, by name (measures.json)

    @property
    def where(self) -> str:
        """The run's folder, resolved: what a listening test records of where a clip came from."""
        return str(self.folder.resolve())

    @property
    def utterances(self) -> list[ScoredUtterance]:
        return self.scores.utterances

    @property
    def engines(self) -> list[str]:
        return list(self.manifest.setting("asr.engines", []))

    @property
    def headline(self) -> str:
        return self.manifest.setting("score.headline", "micro")

    def model(self, spec: str) -> list[str]:
        found = self.manifest.models.get(spec)
        return sorted(found.files.values()) if found else []

    def measure_specs(self) -> list[str]:
        return [s for s in self.manifest.models if s.partition(":")[0] in self.measures]

    def audio(self, path: str) -> str:
        """A path of its utterances.csv, from wherever this runs: they are relative to the run folder."""
        return str((self.folder / path).resolve()) if path else ""


def folder_of(given: str, results_dir: str = "results") -> Path:
    return Path(given) if Path(given).is_dir() else Path(results_dir) / given


def load(given: str, results_dir: str = "results") -> Run:
    """A run by its folder or its name (results/<name>), as the run left it; InputError naming the file and the
    fix when it is not a run, was made by an older or newer version, did not finish, or a file it is read from
    changed since the run sealed it."""
    folder = folder_of(given, results_dir)
    if not (folder / NAME).is_file():
        where = f"a run name is looked up in {results_dir}/, so {folder} was tried" if folder != Path(given) else \
            f"{folder} has no {NAME}"
        raise InputError(f"{given}: not a run ({where}); give a results folder such as results/default, or the "
                         "name of a run in the folder --results-dir DIR names")
    manifest = _sealed_manifest(given, folder)
    unsealed = [f"{folder / name}: {why}" for name, why in _changed(folder, manifest)]
    if unsealed:
        raise InputError(f"{given}: files changed since the run sealed them, so its numbers are not the run's:\n  - "
                         + "\n  - ".join(unsealed) + "\n  Copy the run folder again whole, or run the command that "
                         "made it again (an edit by hand is undone by --from score --force)")
    try:
        scores = Results(normalizer=manifest.setting("score.normalize", ""),
                         language=manifest.setting("asr.language", "en"),
                         utterances=records.read_csv(folder / "utterances.csv", ScoredUtterance),
                         events=records.read_csv(folder / "errors.csv", ErrorEvent))
    except (ValueError, KeyError, TypeError) as e:
        raise InputError(f"{given}: {e}; rescore it with this version (`--from score --force`)") from None
    return Run(folder.name, folder, manifest, scores, described(store.read_json_or_empty(folder / "measures.json")))


def _sealed_manifest(given: str, folder: Path) -> RunManifest:
    path = folder / NAME
    rerun = f"run the command that made {given} again (a run that is up to date only seals its files, in seconds)"
    try:
        data = store.read_json(path)
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: unreadable ({e}): torn or not JSON; copy the run folder again, or {rerun}") from None
    if not isinstance(data, dict) or "scoring_revision" not in data or "models" not in data:
        raise InputError(f"{given}: made by an older version of this tool (its {NAME} has no "
                         f"{'models' if isinstance(data, dict) and 'scoring_revision' in data else 'scoring_revision'}"
                         "); rescore it with this version: run the command that made it again with "
                         "`--from score --force`")
    if "record_sha256" not in data or "sealed" not in data:
        raise InputError(f"{given}: made by an older version of this tool, which did not seal its files; {rerun}")
    if not store.read_record(path):
        raise InputError(f"{path}: changed since the run wrote it (its seal does not match its content): edited by "
                         f"hand or torn; copy the run folder again, or {rerun}")
    data.pop("record_sha256")
    try:
        manifest = RunManifest.from_json(data)
    except NewerManifest as e:
        raise InputError(f"{path}: {e}") from None
    except (TypeError, ValueError, AttributeError) as e:
        raise InputError(f"{path}: not a manifest this tool wrote ({e}); {rerun}") from None
    if not manifest.complete:
        stopped = [s for s, status in manifest.stage_status.items() if status == "running"]
        behind = manifest.stale_stages
        why = (f"its last run stopped during {stopped[0]}" if stopped else
               f"its stages {', '.join(behind)} have not run since their inputs changed (a run with --stages or "
               "--from?)" if behind else "its last run did not finish")
        raise InputError(f"{given}: not a finished run: {why}; run its command again, without --stages or --from")
    return manifest


def _changed(folder: Path, manifest: RunManifest) -> list[tuple[str, str]]:
    """Each file a reader reads that is not as the run sealed it, and how."""
    out = []
    for name in READ:
        sealed, sha = manifest.sealed.get(name), store.sha256_or_none(folder / name)
        if sealed is None and sha is not None:
            out.append((name, "not one of the files the run made"))
        elif sealed is not None and sha is None:
            out.append((name, "missing"))
        elif sealed != sha:
            out.append((name, "edited or torn since (its sha256 is not the one sealed in manifest.json)"))
    if "utterances.csv" not in manifest.sealed:
        out.append(("utterances.csv", "the run has not scored anything"))
    return out
