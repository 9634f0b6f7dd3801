"""Ctrl-C and SIGTERM: raised wherever the run is, so that it unwinds (Ray actors shut down, temporary files
removed, the run directory unlocked), and remembered. Python runs a signal handler between any two bytecodes of
the main thread, a finalizer's too, and what a finalizer raises is printed and dropped; so a stage checks at
each item boundary whether a signal came that nothing acted on (`check`)."""
from __future__ import annotations

import signal

received: list[int] = []  # also for a library that catches Terminated and raises its own exception instead


class Terminated(KeyboardInterrupt):
    """SIGTERM, unwinding as Ctrl-C does."""

    def __init__(self, signum: int):
        super().__init__()
        self.signum = signum


def _raise(signum, frame):
    received.append(signum)
    raise KeyboardInterrupt if signum == signal.SIGINT else Terminated(signum)


def install() -> dict:
    """Our handlers for SIGTERM, and for SIGINT unless it is ignored (a run started in the background);
    returns the previous ones, for `restore`."""
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig, handler in previous.items():
        if sig == signal.SIGTERM or handler is signal.default_int_handler:
            signal.signal(sig, _raise)
    return previous


def restore(previous: dict) -> None:
    for sig, handler in previous.items():
        if handler is not None:
            signal.signal(sig, handler)


def check() -> None:
    """Raise again a signal that arrived and was dropped (in a finalizer): stop now, not at the end of the run."""
    if received:
        raise KeyboardInterrupt if received[0] == signal.SIGINT else Terminated(received[0])
