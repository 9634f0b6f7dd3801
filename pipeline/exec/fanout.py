"""A function over a stream of items in worker processes, its results given back in the items' order.

For CPU-bound pure Python, where threads share one interpreter lock: `score`'s chunks of pairs. Each item is
computed alone, so the results are those of a plain loop whatever the number of processes; only a window of
items is in flight, so a stream of any length takes the memory of a few. The workers are forked, and so start
with what the parent has loaded (a compiled aligner), where spawned ones would import it all again; where fork is
not how processes are made (not Linux), the loop runs in this process."""
from __future__ import annotations

import math
import multiprocessing
import os
import signal
import sys
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Callable, Iterable, Iterator, TypeVar

T, R = TypeVar("T"), TypeVar("R")
_END = object()
MAX_WORKERS = 8  # past this, the parent's own share (reading the items, writing the results) is the limit
WINDOW = 2  # items in flight per worker: one being computed, one waiting, so no worker waits on the parent


def default_workers() -> int:
    """One process per core this process may run on, up to MAX_WORKERS; one where processes are not forked."""
    if sys.platform != "linux":
        return 1
    return max(1, min(len(os.sched_getaffinity(0)), cgroup_cpus(), MAX_WORKERS))


def cgroup_cpus(cpu_max: str = "/sys/fs/cgroup/cpu.max") -> int:
    """The cores a container's CPU quota allows (cgroup v2 `cpu.max`, "200000 100000": two), rounded up; a
    container may see every core of its host and be allowed two, where more processes than two only contend."""
    try:
        quota, period = Path(cpu_max).read_text().split()[:2]
        return max(1, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError):  # no cgroup v2 file here, or "max": no quota
        return MAX_WORKERS


def _ignore_interrupts() -> None:
    # Ctrl-C reaches the whole process group; the parent alone stops the work and removes what it had not finished
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def ordered(fn: Callable[[T], R], items: Iterable[T], workers: int,
            prepare: Callable[[], None] | None = None) -> Iterator[R]:
    """fn(item) for each item, in order, on up to `workers` forked processes (in this one when `workers` is 1 or
    there is only one item). `fn` must be a module-level function, and its items and results picklable.
    `prepare`: called here before the processes are forked, to load once what each of them would load."""
    items = iter(items)
    first, second = next(items, _END), next(items, _END)
    if workers <= 1 or second is _END or sys.platform != "linux":
        yield from map(fn, (x for x in (first, second) if x is not _END))
        yield from map(fn, items)
        return
    if prepare is not None:
        prepare()
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                               initializer=_ignore_interrupts)
    try:
        waiting = deque([pool.submit(fn, first), pool.submit(fn, second)])
        for item in items:
            waiting.append(pool.submit(fn, item))
            if len(waiting) >= WINDOW * workers:
                yield waiting.popleft().result()
        while waiting:
            yield waiting.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
