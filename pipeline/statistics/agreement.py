"""How often the ASR engines agree on what each utterance said, per voice and condition (agreement.csv): engines
of different model families that agree word for word say the audio was clear."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pipeline.core.records import ALIGNED
from pipeline.scoring.utterances import ScoredUtterance
from pipeline.statistics import STATISTICS, Statistic
from pipeline.statistics.words import each_own_family


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineAgreement:
    voice: str
    condition: str
    engines: int
    utterances: int  # sentences every engine transcribed
    agreement: float | None  # share whose normalized hypotheses are identical across the engines
    families: int  # model families among the engines
    family_agreement: float | None  # share where every family wrote one hypothesis in common; None: one family


def agreement(utterances: list[ScoredUtterance],
              family_of: Callable[[str], str] = each_own_family) -> list[EngineAgreement]:
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


STATISTICS.register(Statistic("agreement", "agreement.csv", EngineAgreement,
                              lambda given: agreement(given.scores.utterances, given.family_of)))
