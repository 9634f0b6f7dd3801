"""When a recording counts as heard: one rule, which the server applies before it takes a vote and the analysis
applies again when it reads the votes back, so that the page, the server and the acceptance rules never disagree.

A clip counts as played to its end when the listener's browser fetched its audio from the server, then sent a
"play" event, and then an "ended" event no sooner than the clip's length after that play, less a tolerance:
SPEED_TOLERANCE of the length (a browser's clock and the network's delays) and LATENCY_S (the two events' trips
to the server). An "ended" sent without fetching the audio, or sooner than the clip can play, is not an end. The
times are the server's own, when each event arrived."""
from __future__ import annotations

from dataclasses import dataclass

SPEED_TOLERANCE = 0.1  # of a clip's length: a clip counts as heard from 90% of its length on
LATENCY_S = 0.25
EVENTS_PER_TRIAL = 64  # play events a listener may send for one trial: every replay, paused and resumed, many times


@dataclass(frozen=True)
class Event:
    clip: str
    event: str  # fetched, play or ended
    at: float  # the server's time


def shortest(seconds: float) -> float:
    """The least time from a play to its end that counts as hearing a clip of this length."""
    return max(0.0, seconds * (1 - SPEED_TOLERANCE) - LATENCY_S)


def heard(events: list[Event], clip: str, seconds: float) -> bool:
    """Whether these events (one listener's, in the order the server took them) show `clip` played to its end."""
    fetched = play = None
    for e in events:
        if e.clip != clip:
            continue
        if e.event == "fetched" and fetched is None:
            fetched = e.at
        elif e.event == "play" and fetched is not None:
            play = e.at
        elif e.event == "ended" and play is not None and e.at - play >= shortest(seconds):
            return True
    return False
