"""One lock per run folder, its `.lock` file: held exclusively by the run that writes the folder, shared by every
reader of a finished run (compare-runs, listen create), so that no run is rewritten under a verdict and no verdict
reads a run half written. The file holds the writer's pid, to name it."""
from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path

NAME = ".lock"


class RunInUse(RuntimeError):
    """A run folder another process holds: a run writing it, or (for a run) a reader of it."""


def _alive(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


@contextlib.contextmanager
def writing(run_dir: Path):
    """The folder held for one run: a second is refused at once with the holder's pid."""
    run_dir.mkdir(parents=True, exist_ok=True)
    f = open(run_dir / NAME, "a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        holder = f.read().strip()
        f.close()
        by = f"pid {holder}" if holder and _alive(holder) else "another process (a compare-runs reading it?)"
        raise RunInUse(f"run directory {run_dir} is in use by {by}; wait for it to finish, "
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


@contextlib.contextmanager
def reading(folder: Path, wait: float = 0):
    """The folder held shared while a finished run is read; a run being written is waited for up to `wait`
    seconds, then RunInUse. A folder no run ever locked (a copy without its .lock) is read as it is."""
    path = folder / NAME
    if not path.is_file():
        yield
        return
    with open(path) as f:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = f.read().strip() or "another process"
                    raise RunInUse(f"{folder} is being written by pid {holder} (a run of it is under way); wait "
                                   "for it to finish, or give --wait SECONDS") from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
