"""Per voice and condition, the share of reference words every model family fails (the voice or the text) and
each family alone fails (that ASR), with bootstrap CIs over sentences (blame.csv)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pipeline.core.records import Status
from pipeline.io.conditions import SILENCE
from pipeline.scoring.rates import corpus_rates
from pipeline.scoring.utterances import Results
from pipeline.statistics import STATISTICS, Statistic


@dataclass(frozen=True, slots=True, kw_only=True)
class Blame:
    """Voice, text or ASR? Of the reference words of one voice and condition that every ASR family heard, the share
    whose failure points one way."""
    voice: str
    condition: str
    points_at: str  # "voice or text" (every family failed the word) or "ASR <family>" (only that family did)
    words: int  # reference words every family heard (a sentence × word position)
    failures: int  # of them, the ones failed this way
    rate: float | None  # failures / words
    ci95_low: float | None  # bootstrap over sentences
    ci95_high: float | None


def blame(scores: Results, family_of: Callable[[str], str], n_boot: int = 1000, seed: int = 1337) -> list[Blame]:
    """Per voice × condition, where two or more model families heard the same sentences: each reference word
    position is failed by every family (the voice or the text), by one family only (that ASR), or by none; the
    share of each, with a bootstrap CI over sentences. A family fails a word when any of its engines does."""
    heard: dict[tuple[str, str], dict[str, dict[str, list[bool]]]] = {}  # (voice, condition) → sentence → family
    for u in scores.utterances:
        if u.status != Status.OK or u.condition == SILENCE:
            continue
        failed = [f for _, f, _ in scores.words(u)]
        family = heard.setdefault((u.voice, u.condition), {}).setdefault(u.sentence_id, {})
        prior = family.get(family_of(u.asr))
        family[family_of(u.asr)] = failed if prior is None else [a or b for a, b in zip(prior, failed)]
    families = sorted({family_of(u.asr) for u in scores.utterances})
    if len(families) < 2:
        return []
    out = []
    for (voice, condition), sentences in heard.items():
        complete = [f for f in sentences.values() if len(f) == len(families)]
        if not complete:
            continue
        ways = ["voice or text", *(f"ASR {f}" for f in families)]
        counts = {way: [] for way in ways}
        for by_family in complete:
            for way in ways:
                counts[way].append(0)
            for position in zip(*(by_family[f] for f in families)):
                failing = [f for f, failed in zip(families, position) if failed]
                if len(failing) == len(families):
                    counts["voice or text"][-1] += 1
                elif len(failing) == 1:
                    counts[f"ASR {failing[0]}"][-1] += 1
        words = [len(next(iter(f.values()))) for f in complete]
        for way, c in zip(ways, corpus_rates([(counts[w], words) for w in ways], n_boot, seed)):
            out.append(Blame(voice=voice, condition=condition, points_at=way, words=c.ref_words, failures=c.errors,
                             rate=None if c.micro_wer is None else round(c.micro_wer, 4),
                             ci95_low=None if c.ci_low is None else round(c.ci_low, 4),
                             ci95_high=None if c.ci_high is None else round(c.ci_high, 4)))
    return out


STATISTICS.register(Statistic("blame", "blame.csv", Blame,
                              lambda given: blame(given.scores, given.family_of, given.n_boot, given.seed)))
