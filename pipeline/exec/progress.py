"""What the terminal shows: progress bars for every long loop (live on a terminal; in a log file, one plain
line at most every 30 s), and `say`, a line for the user that run.log keeps too.

tqdm writes a redrawn bar with carriage returns and redraws it on every `set_postfix` unless told not to, which
in a log file is a line each time (2,000 of them for a default training run); so when stderr is not a terminal a
small logger of our own stands in for it, with the same calls (iterate, update, set_postfix, write, close)."""
from __future__ import annotations

import logging
import os
import sys
import time
from typing import Callable, Iterable

LOG_INTERVAL_S = 30.0


def say(text: str, stream=None, level: int = logging.ERROR) -> None:
    """A line for the terminal (stderr unless told), kept in run.log as well, once: the terminal shows it without
    the log's stamp."""
    print(text, file=stream or sys.stderr, flush=True)
    record = logging.LogRecord("pipeline", level, __file__, 0, text, None, None)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler):
            handler.handle(record)
            handler.flush()


class LogBar:
    """`desc: n/total (p%), r it/s` on stderr at most every `interval` seconds, and once at the end."""

    def __init__(self, iterable: Iterable | None = None, total: int | None = None, desc: str = "",
                 initial: int = 0, disable: bool = False, interval: float = LOG_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic, stream=None):
        self.iterable, self.desc, self.n, self.disable = iterable, desc, initial, disable
        self.total = total if total is not None else (len(iterable) + initial if hasattr(iterable, "__len__") else None)
        self.interval, self.clock, self.stream = interval, clock, stream or sys.stderr
        self.start = self.last = clock()
        self.start_n, self.closed, self.postfix = initial, False, ""

    def __iter__(self):
        for value in self.iterable:
            yield value
            self.update(1)

    def update(self, n: int = 1) -> None:
        self.n += n
        if not self.disable and self.clock() - self.last >= self.interval:
            self._line()

    def set_postfix(self, refresh: bool = False, **values) -> None:
        """Values shown on the next line; never a line of their own."""
        self.postfix = ", ".join(f"{k}={v}" for k, v in values.items())

    def write(self, text: str) -> None:
        print(text, file=self.stream)

    def close(self) -> None:
        if not self.closed and not self.disable and self.n > self.start_n:
            self._line()
        self.closed = True

    def _line(self) -> None:
        now = self.clock()
        self.last = now
        rate = (self.n - self.start_n) / (now - self.start) if now > self.start else 0.0
        of = f"/{self.total} ({100 * self.n / self.total:.0f}%)" if self.total else ""
        extra = f", {self.postfix}" if self.postfix else ""
        print(f"{self.desc}: {self.n}{of}, {rate:.2f} it/s{extra}", file=self.stream, flush=True)


def bar(iterable=None, **kwargs):
    disable = kwargs.pop("disable", False) or os.environ.get("TQDM_DISABLE", "").lower() in ("1", "true")
    if not sys.stderr.isatty():
        return LogBar(iterable, disable=disable, **kwargs)
    from tqdm import tqdm

    return tqdm(iterable, mininterval=0.1, dynamic_ncols=True, disable=disable, **kwargs)
