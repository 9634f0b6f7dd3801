"""Which words fail, and whom to blame: a word that fails in every voice points at the text or the ASR; one
that fails in one voice of several points at that voice. Engines that hear the same audio and agree word for
word say the audio was clear."""
from __future__ import annotations

from pipeline.core.records import EngineAgreement, ErrorEvent, ScoredUtterance, WordAttribution
from pipeline.io.conditions import SILENCE
from pipeline.scoring.align import from_events


def words(utterances: list[ScoredUtterance], events: list[ErrorEvent]) -> list[WordAttribution]:
    """Every reference word that failed at least once, hardest first (failure rate, then failures)."""
    by_id: dict[str, list[ErrorEvent]] = {}
    for e in events:
        by_id.setdefault(e.id, []).append(e)
    seen: dict[str, dict] = {}
    for u in utterances:
        if u.status != "ok" or u.condition == SILENCE:
            continue
        for op, ref, _ in from_events(u.reference_normalized, u.hypothesis_normalized, by_id.get(u.id, [])):
            if ref is None:
                continue
            w = seen.setdefault(ref, {"n": 0, "failed": [], "voices": set(), "engines": set(), "voices_failed": set(),
                                      "engines_failed": set()})
            w["n"] += 1
            w["voices"].add(u.voice)
            w["engines"].add(u.asr)
            if op in ("S", "D"):
                w["failed"].append(u.id)
                w["voices_failed"].add(u.voice)
                w["engines_failed"].add(u.asr)
    out = []
    for word, w in seen.items():
        if not w["failed"]:
            continue
        points = ""
        if len(w["voices"]) > 1:
            if w["voices_failed"] == w["voices"]:
                points = "text or ASR"
            elif len(w["voices_failed"]) == 1:
                points = f"voice {next(iter(w['voices_failed']))}"
        out.append(WordAttribution(word=word, occurrences=w["n"], failures=len(w["failed"]),
                                   failure_rate=round(len(w["failed"]) / w["n"], 4),
                                   voices_failed=len(w["voices_failed"]), voices_heard=len(w["voices"]),
                                   engines_failed=len(w["engines_failed"]), engines_heard=len(w["engines"]),
                                   points_at=points, utterances=";".join(dict.fromkeys(w["failed"]))))
    return sorted(out, key=lambda a: (-a.failure_rate, -a.failures, a.word))


def agreement(utterances: list[ScoredUtterance]) -> list[EngineAgreement]:
    """Per voice × condition: the share of sentences whose normalized hypotheses all engines wrote alike."""
    engines = sorted({u.asr for u in utterances})
    if len(engines) < 2:
        return []
    heard: dict[tuple, dict[str, dict[str, str]]] = {}
    for u in utterances:
        if u.status in ("ok", "empty_reference"):
            heard.setdefault((u.voice, u.condition), {}).setdefault(u.sentence_id, {})[u.asr] = u.hypothesis_normalized
    out = []
    for (voice, condition), sentences in heard.items():
        complete = [h for h in sentences.values() if len(h) == len(engines)]
        same = sum(1 for h in complete if len(set(h.values())) == 1)
        out.append(EngineAgreement(voice=voice, condition=condition, engines=len(engines), utterances=len(complete),
                                   agreement=round(same / len(complete), 4) if complete else None))
    return out
