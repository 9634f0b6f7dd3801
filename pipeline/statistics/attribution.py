"""Which words fail, and whom to blame. Engines are grouped by the model they run (their model family: every
Whisper engine is one family, PocketSphinx another), since engines of one family share its blind spots: an error
that two families make on one voice points at the voice or the text; one that a single family makes points at
that ASR. Engines of different families that agree word for word say the audio was clear."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pipeline.core.records import ALIGNED, Status, lm_only
from pipeline.io.conditions import CLEAN, SILENCE
from pipeline.scoring.utterances import Results, ScoredUtterance
from pipeline.scoring.rates import corpus_rates
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


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineAgreement:
    voice: str
    condition: str
    engines: int
    utterances: int  # sentences every engine transcribed
    agreement: float | None  # share whose normalized hypotheses are identical across the engines
    families: int  # model families among the engines
    family_agreement: float | None  # share where every family wrote one hypothesis in common; None: one family


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


def _each_own_family(engine: str) -> str:
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


def words(scores: Results, family_of: Callable[[str], str] = _each_own_family) -> list[WordAttribution]:
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


def agreement(utterances: list[ScoredUtterance],
              family_of: Callable[[str], str] = _each_own_family) -> list[EngineAgreement]:
    """Per voice × condition: the share of sentences whose normalized hypotheses all engines wrote alike, and the
    share where every model family wrote one hypothesis in common (engines of one family share its blind spots, so
    only agreement across families says the audio was clear)."""
    engines = sorted({u.asr for u in utterances})
    if len(engines) < 2:
        return []
    families = {e: family_of(e) for e in engines}
    heard: dict[tuple, dict[str, dict[str, str]]] = {}
    for u in utterances:
        if u.status in ALIGNED:
            heard.setdefault((u.voice, u.condition), {}).setdefault(u.sentence_id, {})[u.asr] = u.hypothesis_normalized
    n_families = len(set(families.values()))
    out = []
    for (voice, condition), sentences in heard.items():
        complete = [h for h in sentences.values() if len(h) == len(engines)]
        same = sum(1 for h in complete if len(set(h.values())) == 1)
        across = None
        if n_families > 1 and complete:
            def shared(h: dict[str, str]) -> bool:
                by_family: dict[str, set[str]] = {}
                for engine, text in h.items():
                    by_family.setdefault(families[engine], set()).add(text)
                return bool(set.intersection(*by_family.values()))
            across = round(sum(1 for h in complete if shared(h)) / len(complete), 4)
        out.append(EngineAgreement(voice=voice, condition=condition, engines=len(engines), utterances=len(complete),
                                   agreement=round(same / len(complete), 4) if complete else None,
                                   families=n_families, family_agreement=across))
    return out


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


STATISTICS.register(Statistic("words", "words.csv", WordAttribution, lambda given: words(given.scores, given.family_of)))
STATISTICS.register(Statistic("agreement", "agreement.csv", EngineAgreement,
                              lambda given: agreement(given.scores.utterances, given.family_of)))
STATISTICS.register(Statistic("blame", "blame.csv", Blame,
                              lambda given: blame(given.scores, given.family_of, given.n_boot, given.seed)))
