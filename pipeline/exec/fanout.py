"""A function over a stream of items in worker processes, its results given back in the items' order.

For CPU-bound pure Python, where threads share one interpreter lock: `score`'s chunks of pairs. Each item is
computed alone, so the results are those of a plain loop whatever the number of processes; only a window of
items is in flight, so a stream of any length takes the memory of a few. The workers are forked, and so start
with what the parent has loaded (a compiled aligner), where spawned ones would import it all again; where fork is
not how processes are made (not Linux), the loop runs in this process."""
from __future__ import annotations

import contextlib
import logging
import math
import multiprocessing
import os
import signal
import sys
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Callable, Iterable, Iterator, TypeVar

T, R = TypeVar("T"), TypeVar("R")
log = logging.getLogger(__name__)
_END = object()
MAX_WORKERS = 8  # past this, the parent's own share (reading the items, writing the results) is the limit
WINDOW = 2  # items in flight per worker: one being computed, one waiting, so no worker waits on the parent
STOPS = {signal.SIGINT, signal.SIGTERM}
POLL_S = 0.05  # how long a Ctrl-C may wait for the executor's code to finish what it is doing


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


def _in_worker() -> None:
    # Ctrl-C reaches the whole process group; the parent alone stops the work and removes what it had not
    # finished. A SIGTERM sent to a worker ends it, as it would any process.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


@contextlib.contextmanager
def _held():
    """Ctrl-C and SIGTERM held back while the executor's own code runs, and delivered when it is done. Raised inside
    it (a lock held, a worker half forked, a thread not yet started) they leave it unable to shut down, and Python
    drops what a handler raises inside an at-fork hook, so the run would go on. Threads and processes it starts
    meanwhile keep them blocked: only this thread acts on them."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def ordered(fn: Callable[[T], R], items: Iterable[T], workers: int,
            prepare: Callable[[], None] | None = None) -> Iterator[R]:
    """fn(item) for each item, in order, on up to `workers` forked processes (in this one when `workers` is 1 or
    there is only one item). `fn` must be a module-level function, and its items and results picklable.
    `prepare`: called here before the processes are forked, to load once what each of them would load. A worker
    that dies (killed by the system, out of memory) costs time, not results: the items it and the others had not
    given back are computed here, as every item after them."""
    items = iter(items)
    first, second = next(items, _END), next(items, _END)
    if workers <= 1 or second is _END or sys.platform != "linux":
        yield from map(fn, (x for x in (first, second) if x is not _END))
        yield from map(fn, items)
        return
    if prepare is not None:
        prepare()
    with _held():
        pool = _Pool(fn, workers)
    try:
        waiting = deque([pool.submit(first), pool.submit(second)])
        for item in items:
            waiting.append(pool.submit(item))
            if len(waiting) >= WINDOW * workers:
                yield pool.result(*waiting.popleft())
        while waiting:
            yield pool.result(*waiting.popleft())
    finally:
        with _held():
            pool.executor.shutdown(wait=True, cancel_futures=True)


class _Pool:
    """The worker processes, and this process once one of them has died. Every call into the executor is _held."""

    def __init__(self, fn: Callable, workers: int) -> None:
        self.fn, self.broken = fn, False
        self.executor = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                                            initializer=_in_worker)

    def submit(self, item) -> tuple[object, Future | None]:
        if not self.broken:
            try:
                with _held():
                    return item, self.executor.submit(self.fn, item)
            except BrokenProcessPool:
                self._died()
        return item, None

    def result(self, item, future: Future | None):
        while future is not None:  # one given back before a worker died is whole
            try:
                with _held():
                    return future.result(timeout=POLL_S)
            except TimeoutError:
                continue  # a Ctrl-C that came meanwhile is raised here, between two waits
            except BrokenProcessPool:
                self._died()
                break
        return self.fn(item)

    def _died(self) -> None:
        if not self.broken:
            log.warning("a worker process died (killed by the system, out of memory?): what is left is computed "
                        "in this process")
        self.broken = True
