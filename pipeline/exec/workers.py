"""What every worker shares: the per-item work of a stage, as an object that loads its model once.

The same classes run in-process (local executor) and as Ray actors (ray executor): a worker never touches the
run directory; it returns a typed result (a `Done`) per input, and the stage writes files through its per-item
cache (pipeline/exec/items.py). The workers themselves sit beside their backends: pipeline/tts/speaker.py,
pipeline/asr/transcriber.py, pipeline/measures/assessor.py."""
from __future__ import annotations

import os
import socket
import sys
from dataclasses import dataclass, field, fields
from typing import Protocol

from pipeline.core.source import Source
from pipeline.errors import WRITE_ERRORS, ModelUnloadable


def where() -> dict:
    """Which node and process did the work (a Ray node id when inside Ray)."""
    node = socket.gethostname()
    ray = sys.modules.get("ray")  # a Ray worker has imported it; a local run need not pay 0.2 s to learn it is not one
    if ray is not None and ray.is_initialized():
        node = ray.get_runtime_context().get_node_id()
    return {"node": node, "pid": os.getpid()}


@dataclass(kw_only=True, slots=True)
class Done:
    """What a worker made of one input, as kept in the item's record."""
    status: str  # ok, skipped or error
    error: str = ""
    node: str = ""  # where it ran (a Ray node id inside Ray)
    pid: int = 0

    def record(self) -> dict:
        """The fields kept in the item's cache record."""
        return {name: getattr(self, name) for name in self.recorded()}

    @classmethod
    def recorded(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls) if not f.metadata.get("transient"))

    @classmethod
    def from_record(cls, record: dict) -> Done:
        return cls(**{name: record[name] for name in cls.recorded() if name in record})


def transient(default=None):
    """A field that travels from the worker to the stage but is not kept in the record (the stage writes it)."""
    return field(default=default, metadata={"transient": True})


class Worker(Protocol):
    """Loads its model once; `work` turns a batch of inputs into one result per input, each depending only on
    its own input. Local executors call it in-process, Ray calls it on an actor."""
    def work(self, batch: list) -> list[Done]: ...


def one_blas_thread() -> None:
    """numpy's BLAS on one thread in a process that computes per-utterance results. Its multi-threaded matrix
    products split the sums otherwise, so faster-whisper's mel features, and a transcript with them, depended on the
    core count and on the executor (measured: a tiny.en transcript at 10 dB SNR ended in `king."` on 2 threads and
    `king.` on 1, the thread count Ray gives its workers); each utterance already runs on one thread."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(1, user_api="blas")


def unloadable(source: Source, e: Exception) -> Exception:
    """What a model that failed to load stops the stage with, once, rather than on every row: a write that failed
    (a full disk while weights are converted) as the OSError it is, naming the file (exit 4); anything else as a
    model error naming the model's files (exit 2)."""
    if isinstance(e, OSError) and e.errno in WRITE_ERRORS:
        return e
    files = ", ".join(source.files) or source.path or source.spec
    return ModelUnloadable(f"{source.spec}: cannot load {files} ({type(e).__name__}: {e}); the files are damaged "
                           "or not of this model family: download or copy them again, or name another model")
