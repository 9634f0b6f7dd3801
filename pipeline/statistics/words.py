"""Which words fail, and whom to blame (words.csv): every reference word that failed at least once, hardest first.
Engines are grouped by the model they run (their model family: every Whisper engine is one family, PocketSphinx
another), since engines of one family share its blind spots: an error that two families make on one voice points at
the voice or the text; one that a single family makes points at that ASR."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pipeline.core.records import Status, lm_only
from pipeline.io.conditions import CLEAN, SILENCE
from pipeline.scoring.utterances import Results
from pipeline.statistics import STATISTICS, Statistic


@dataclass(frozen=True, slots=True, kw_only=True)
class WordAttribution:
    word: str  # a normalized reference word
    occurrences: int  # in scored utterances
    failures: int  # substituted or deleted
    failure_rate: float
    voices_failed: int  # voices in which it failed at least once
    voices_heard: int  # voices that said it
    engines_failed: int
    engines_heard: int
    points_at: str  # text, voice <name>, voice or text (every model family fails it on a voice), ASR <family>
    # (one family fails it where another heard it right), or, with one family, "one ASR family: text or ASR"
    utterances: str  # ;-separated ids of the rows where it failed
    families_failed: int  # model families (Whisper, PocketSphinx) in which it failed
    families_heard: int
    mean_surprisal: float | None = lm_only()  # bits under the LM, over its occurrences


def each_own_family(engine: str) -> str:
    return engine


def verdict(heard: dict[str, set[str]], failed: dict[str, set[str]]) -> str:
    """Whom one word's failures point at, from {voice: model families that heard it} and {voice: families that
    failed it there}.

    An error that every family makes on a voice is in the audio or the text: the text when it is so in every voice
    (of several), that voice when it is so in one voice of several. An error that one family makes where another
    heard the same word right is that family's. With one family, text and ASR cannot be told apart, and the verdict
    says so; a failure in one voice of several still points at that voice."""
    families = set().union(*heard.values())
    both = {v for v, f in failed.items() if len(heard[v]) > 1 and f == heard[v]}
    voices_failed = {v for v, f in failed.items() if f}
    if len(families) < 2:
        if len(heard) > 1 and len(voices_failed) == 1:
            return f"voice {next(iter(voices_failed))}"
        return "one ASR family: text or ASR"
    if both:
        if len(heard) > 1 and both == set(heard):
            return "text"
        if len(heard) > 1 and voices_failed == both and len(both) == 1:
            return f"voice {next(iter(both))}"
        return "voice or text"
    failing = set().union(*failed.values())
    return f"ASR {next(iter(failing))}" if len(failing) == 1 else "ASR"


def words(scores: Results, family_of: Callable[[str], str] = each_own_family) -> list[WordAttribution]:
    """Every reference word that failed at least once, hardest first (failure rate, then failures).
    `family_of(engine)` names the model family an engine runs (asr.base.ENGINES.model_family). The counts cover
    every condition; the verdict is drawn from the clean audio where the word was heard clean, since noise makes
    every engine fail and would point at the text."""
    seen: dict[str, dict] = {}
    for u in scores.utterances:
        if u.status != Status.OK or u.condition == SILENCE:
            continue
        family = family_of(u.asr)
        for ref, failed, bits in scores.words(u):
            w = seen.setdefault(ref, {"n": 0, "failed": [], "engines": set(), "engines_failed": set(), "heard": {},
                                      "failed_by": {}, "bits": [], "clean": ({}, {})})
            w["n"] += 1
            w["engines"].add(u.asr)
            if bits is not None:
                w["bits"].append(bits)
            for heard, failed_by in ((w["heard"], w["failed_by"]), *([w["clean"]] if u.condition == CLEAN else [])):
                heard.setdefault(u.voice, set()).add(family)
                failed_by.setdefault(u.voice, set())
                if failed:
                    failed_by[u.voice].add(family)
            if failed:
                w["failed"].append(u.id)
                w["engines_failed"].add(u.asr)
    out = []
    for word, w in seen.items():
        if not w["failed"]:
            continue
        voices_failed = [v for v, f in w["failed_by"].items() if f]
        out.append(WordAttribution(word=word, occurrences=w["n"], failures=len(w["failed"]),
                                   failure_rate=round(len(w["failed"]) / w["n"], 4),
                                   voices_failed=len(voices_failed), voices_heard=len(w["heard"]),
                                   engines_failed=len(w["engines_failed"]), engines_heard=len(w["engines"]),
                                   points_at=verdict(*(w["clean"] if w["clean"][0] else (w["heard"], w["failed_by"]))),
                                   utterances=";".join(dict.fromkeys(w["failed"])),
                                   families_failed=len(set().union(*w["failed_by"].values())),
                                   families_heard=len(set().union(*w["heard"].values())),
                                   mean_surprisal=round(sum(w["bits"]) / len(w["bits"]), 3) if w["bits"] else None))
    return sorted(out, key=lambda a: (-a.failure_rate, -a.failures, a.word))


STATISTICS.register(Statistic("words", "words.csv", WordAttribution, lambda given: words(given.scores, given.family_of)))
