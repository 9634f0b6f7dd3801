"""Ctrl-C and SIGTERM in the middle of transcription: out within 5 s with one line saying what was kept, no
traceback, and the same command continues from there, on the local executor and on Ray."""
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.core import store
from tests.helpers import OWN_CACHE, ROOT

pytestmark = pytest.mark.slow  # real models and pipeline runs: left out of `pytest -m "not slow"`

LINES = [f"{w} is the winter of our discontent, made glorious summer by this sun of York." for w in
         ("Now", "Then", "Here", "There", "Once", "Still", "Soon", "Long", "Late", "Cold", "Dark", "Deep")]
KEPT = re.compile(r"^interrupted: (\d+) of (\d+) transcripts kept \(transcribe faster-whisper:tiny\.en\); "
                  r"run the same command to continue$")


@pytest.fixture(autouse=True)
def ctrl_c_as_from_a_terminal():
    """A run started from a terminal gets Ctrl-C. One started in the background (`cmd &` in a script) inherits
    SIGINT ignored and keeps ignoring it, as Python does, so that a Ctrl-C meant for the shell does not stop it.
    These tests are about the first kind, however pytest itself was started: children then get SIGINT as default."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def start(cwd: Path, models: Path, extra: list[str]) -> subprocess.Popen:
    (cwd / "s.txt").write_text("\n".join(LINES) + "\n")
    argv = [sys.executable, str(ROOT / "run_pipeline.py"), "--set", f"models_dir={models}", *OWN_CACHE, "--sentences", "s.txt",
            "--asr", "faster-whisper:tiny.en", "--set", "asr.threads=1", "--set", "asr.batch_size=1", "--measures",
            "none", *extra]
    return subprocess.Popen(argv, cwd=cwd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            env={**os.environ, "TQDM_DISABLE": "1"})


def interrupt_in_transcription(proc: subprocess.Popen, cwd: Path, sig: int,
                               before=lambda: None) -> tuple[int, float, list[str]]:
    """Wait until a few transcripts are on disk, call `before`, send `sig`, and time how long the run takes to
    stop."""
    lines = []
    for line in proc.stderr:
        lines.append(line.rstrip("\n"))
        if "transcribe: running" in line:
            break
    records = cwd / "results" / "default" / "transcripts"
    deadline = time.time() + 120
    while len(list(records.rglob("*.json"))) < 3 and time.time() < deadline:
        time.sleep(0.1)
    before()
    t0 = time.perf_counter()
    proc.send_signal(sig)
    rest = proc.stderr.read()
    code = proc.wait(timeout=60)
    return code, time.perf_counter() - t0, lines + rest.splitlines()


def check_stop(code: int, seconds: float, stderr: list[str], expected_code: int, cwd: Path) -> int:
    assert code == expected_code, stderr[-20:]
    assert seconds < 5, seconds
    assert not any("Traceback" in line for line in stderr), "\n".join(stderr[-30:])
    match = KEPT.match(stderr[-1])
    assert match, stderr[-5:]
    kept, total = int(match.group(1)), int(match.group(2))
    assert total == len(LINES) and 3 <= kept < total
    records = list((cwd / "results" / "default" / "transcripts").rglob("*.json"))
    assert len(records) == kept and all(store.read_record(r) for r in records)  # every record kept is whole
    assert not list(cwd.rglob(".*.tmp"))  # nothing half-written
    return kept


def rerun_continues(cwd: Path, models: Path, kept: int, extra: list[str]) -> None:
    proc = start(cwd, models, extra)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    manifest = store.read_json(cwd / "results" / "default" / "manifest.json")
    assert manifest["stage_results"]["transcribe"]["reused"] == kept
    rows = store.read_csv(cwd / "results" / "default" / "utterances.csv")
    assert len(rows) == len(LINES) and all(r["status"] == "ok" for r in rows)


def test_ctrl_c_stops_within_5_s_and_the_same_command_continues(tmp_path, models_dir):
    proc = start(tmp_path, models_dir, [])
    code, seconds, stderr = interrupt_in_transcription(proc, tmp_path, signal.SIGINT)
    kept = check_stop(code, seconds, stderr, 130, tmp_path)
    assert "interrupted: " in (tmp_path / "results" / "default" / "run.log").read_text()
    rerun_continues(tmp_path, models_dir, kept, [])


def test_sigterm_on_ray_shuts_the_actors_down_and_the_same_command_continues(tmp_path, models_dir):
    pytest.importorskip("ray", reason="needs the ray extra (scripts/setup --test)")
    ray = ["--executor", "ray", "--set", "executor.num_cpus=2", "--set", "executor.actors=1"]
    proc = start(tmp_path, models_dir, ray)
    actors: set[int] = set()
    code, seconds, stderr = interrupt_in_transcription(proc, tmp_path, signal.SIGTERM,
                                                       lambda: actors.update(actors_of(proc.pid)))
    kept = check_stop(code, seconds, stderr, 143, tmp_path)
    assert actors  # this run's own actors, found among its descendants while it transcribed
    deadline = time.monotonic() + 30
    while (left := {pid for pid in actors if alive(pid)}) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, left  # no actor outlives the run
    rerun_continues(tmp_path, models_dir, kept, ray)


def actors_of(pid: int) -> set[int]:
    """The Ray actor processes (their title is ray::Transcriber) among the descendants of a process."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return {p for p in found if b"ray::Transcriber" in _read(f"/proc/{p}/cmdline")}


def alive(pid: int) -> bool:
    """Running, or not yet reaped but not a zombie."""
    stat = _read(f"/proc/{pid}/stat")
    return bool(stat) and stat.rsplit(b")", 1)[1].split()[0] != b"Z"


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError:
        return b""


def test_an_interrupt_that_a_finalizer_drops_still_stops_the_run_at_the_next_check():
    from pipeline.exec import interrupts

    class Finalizer:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(100_000):  # Python runs the handler here, inside __del__, and drops what it raises
                pass

    dropped, hook = [], sys.unraisablehook
    previous = interrupts.install()
    try:
        sys.unraisablehook = lambda unraisable: dropped.append(unraisable.exc_type)  # "Exception ignored in"
        Finalizer()
        sys.unraisablehook = hook
        assert dropped == [interrupts.Interrupted]
        with pytest.raises(interrupts.Interrupted) as stop:
            interrupts.check()
        assert stop.value.signum == signal.SIGINT and not stop.value.stage
    finally:
        sys.unraisablehook = hook
        interrupts.restore(previous)
        interrupts.received.clear()
