"""Ctrl-C and SIGTERM: raised wherever the run is, so that it unwinds (Ray actors shut down, temporary files
removed, the run directory unlocked), and remembered. Python runs a signal handler between any two bytecodes of
the main thread, a finalizer's too, and what a finalizer raises is printed and dropped; so a stage checks at
each item boundary whether a signal came that nothing acted on (`check`)."""
from __future__ import annotations

import signal

received: list[int] = []  # also for a library that catches Interrupted and raises its own exception instead


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM on its way out, with what the run had reached: the stage it stopped in, and what of that
    stage's items was kept. Each layer it passes through adds what it knows (`where`)."""

    def __init__(self, signum: int = signal.SIGINT, stage: str = "", kept: str = ""):
        super().__init__()
        self.signum, self.stage, self.kept = signum, stage, kept

    def where(self, stage: str = "", kept: str = "") -> Interrupted:
        """The same interrupt, with the stage and kept counts filled in where they were not yet."""
        return Interrupted(self.signum, self.stage or stage, self.kept or kept)


def interrupted(stop: KeyboardInterrupt) -> Interrupted:
    """Any interrupt as ours: a KeyboardInterrupt that Python or a library raised is Ctrl-C's."""
    return stop if isinstance(stop, Interrupted) else Interrupted()


def _raise(signum, frame):
    received.append(signum)
    raise Interrupted(signum)


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
        raise Interrupted(received[0])
