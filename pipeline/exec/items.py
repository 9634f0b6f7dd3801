"""Per-item work with a per-item cache, shared by synthesis, assessment and transcription.

Each item has a key (exactly what determines its result) and a sealed JSON record beside its output. A record is
reused only when its key matches and the file it made (a wav) still has the sha256 it recorded; the rest are
computed by a worker on the executor and recorded as they arrive, so a killed run loses only the items in flight.
An item that makes no file (a transcript, a measure's score) is also kept under its key alone in a cache every run
shares (`Item.shared`): the same audio heard by the same engine with the same options under another run name is a
copy of that record, not a decode. Errors are not recorded, and a stage with failed items says how many
(stage.Outcome.failed), so the runner runs it again next time, and only the failed items are tried again; an item
whose input is unusable loads no model (the executor starts a worker with its first job)."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Hashable, TypeVar

from pipeline.core.records import SPOKEN, Status
from pipeline.core import store
from pipeline.exec import interrupts, progress
from pipeline.exec.workers import Done, Worker

D = TypeVar("D", bound=Done)

log = logging.getLogger(__name__)


class Unusable(Exception):
    """An item's input cannot be given to a worker (unreadable audio); the message is the row's error."""


@dataclass
class Item:
    key: str  # "" when its input is unreadable: never cached
    record: Path
    # the worker's argument, and what completes the worker's result with what the stage read (the audio's sha256
    # and level): made only when a worker is free, so audio is read just in time and memory stays flat; raises
    # Unusable
    input: Callable[[], tuple[Any, Callable[[Any], Any]]]
    output: Path | None = None  # the file an ok record describes
    shared: Path | None = None  # the same record in the cache every run shares, by key alone (no output file)


def _usable(path: Path, item: Item) -> dict | None:
    record = store.read_record(path) if item.key else {}
    if record.get("key") != item.key or not item.key:
        return None
    if item.output and record["status"] == Status.OK and record.get("wav_sha256") != store.sha256_or_none(item.output):
        return None  # torn, replaced or gone since
    return record


def cached(item: Item) -> dict | None:
    """The item's record: the run's own, else the shared cache's, which the run then keeps as its own."""
    record = _usable(item.record, item)
    if record is None and item.shared is not None:
        record = _usable(item.shared, item)
        if record is not None:
            store.write_record(item.record, record)
    return record


def as_is(done):
    """An item's result as its worker made it: the stage read nothing to add to it."""
    return done


def written(path: Path) -> dict:
    """What a record keeps of the file it describes."""
    return {"wav_sha256": store.sha256_stat(path), "wav_bytes": path.stat().st_size}


def cached_map(pool, worker: tuple[type[Worker], tuple], items: dict[Hashable, Item], *, result: type[D],
               chunk: int, desc: str, save: Callable[[Hashable, D], D] = lambda item_id, done: done,
               gpus: float = 0, noun: str = "items") -> tuple[dict[Hashable, D], int]:
    """Every item's result (of type `result`), and how many came from the cache.

    `worker[0](*worker[1]).work(list of inputs)` returns one result per input. `save(id, result)` writes what
    the result carries (a wav) and returns the result to record. An interrupt (Ctrl-C, SIGTERM) leaves every
    record written so far, and says how many on its way out (`kept`)."""
    results: dict[Hashable, D] = {}
    pending = []
    for item_id, item in items.items():
        record = cached(item)
        if record is None:
            pending.append(item_id)
        else:
            results[item_id] = result.from_record(record)
    reused = len(results)
    chunks = [pending[k:k + chunk] for k in range(0, len(pending), chunk)]

    def jobs():
        started = False
        for ids in chunks:
            ready, inputs = [], []
            for item_id in ids:
                try:
                    argument, complete = items[item_id].input()
                except Unusable as e:
                    results[item_id] = result(status=Status.ERROR, error=str(e))
                    bar.update(1)
                    continue
                ready.append((item_id, complete))
                inputs.append(argument)
            if ready:
                if not started:  # the worker, and its model, load with the first job
                    log.info("%s: %d %s to compute", desc, len(pending) - (len(results) - reused), noun)
                    started = True
                yield ready, inputs

    bar = progress.bar(total=len(pending), desc=desc)
    try:
        for ready, outcome in pool.map(worker[0], worker[1], jobs(), len(chunks), gpus):
            for (item_id, complete), done in zip(ready, outcome):
                done = save(item_id, complete(done))
                if done.status != Status.ERROR:
                    record = {"key": items[item_id].key, **done.record()}
                    store.write_record(items[item_id].record, record)
                    if items[item_id].shared is not None:
                        store.write_record(items[item_id].shared, record)
                results[item_id] = done
            bar.update(len(ready))
            interrupts.check()
    except KeyboardInterrupt as stop:
        kept = sum(1 for r in results.values() if r.status != Status.ERROR)
        raise interrupts.interrupted(stop).where(kept=f"{kept} of {len(items)} {noun} kept ({desc})") from None
    finally:
        bar.close()
    failed = [results[i].error for i in pending if results[i].status == Status.ERROR]
    if failed and len(failed) == len(pending):
        log.error("%s: %s", desc, failed[0])
    return results, reused


def tally(statuses: list[str], reused: int) -> dict[str, int]:
    """A per-item stage's summary: rows by status, and how many items came from the cache."""
    counts = dict.fromkeys(SPOKEN, 0)
    for status in statuses:
        counts[status] += 1
    return {**counts, "reused": reused}
