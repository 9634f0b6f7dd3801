"""How much of a WER is the normalizer's: every group scored again under each normalizer, from the raw
reference and hypothesis. Cheap (alignment only), and it keeps numbers made under different normalizers from
being compared."""
from __future__ import annotations

from dataclasses import dataclass

from pipeline.core.records import Grouped, Status, columns_of
from pipeline.io.conditions import SILENCE
from pipeline.scoring import language, normalize as norm
from pipeline.scoring.align import aligner_of, tally
from pipeline.scoring.utterances import ScoredUtterance
from pipeline.statistics import STATISTICS, Statistic


@dataclass(frozen=True, slots=True, kw_only=True)
class NormalizerEffect(Grouped):
    voice: str
    asr: str
    condition: str
    wer: dict[str, float | None] = columns_of()  # wer_<normalizer>: the same rows scored under each normalizer
    # of scoring/normalize.py (wer_none: the words as written)
    used: str  # the normalizer of this run's WER
    normalization_share: float | None  # of the errors without normalization, the share the one used removes


def effects(utterances: list[ScoredUtterance], used: str, lang: str = "en") -> list[NormalizerEffect]:
    # every normalizer in the unit of the run's own: CV3-Eval's Korean is characters where basic's is words
    unit = language.unit(lang, used)
    transforms = {name: norm.for_language(name, lang, unit) for name in norm.NORMALIZERS}
    kept = [u for u in utterances if u.status == Status.OK and u.condition != SILENCE]
    totals: dict[tuple, dict[str, list[int]]] = {u.group: {n: [0, 0] for n in transforms} for u in kept}
    for name, t in transforms.items():
        refs = [t.reference(u.reference).split() for u in kept]
        # counted as a run under that normalizer counts: a recipe's by jiwer's alignment, `kaldi`'s by Kaldi's, which
        # can make another number of edits than sclite's weights
        aligner = aligner_of(name)
        for u, ref, codes in zip(kept, refs, aligner(refs, [t.hypothesis(u.hypothesis).split() for u in kept])):
            totals[u.group][name][0] += sum(tally(codes)[1:])
            totals[u.group][name][1] += len(ref)
    out = []
    for (voice, engine, condition), by_name in totals.items():
        wer = {n: round(e / w, 4) if w else None for n, (e, w) in by_name.items()}
        raw = by_name["none"][0]
        share = round((raw - by_name[used][0]) / raw, 4) if raw else None
        out.append(NormalizerEffect(voice=voice, asr=engine, condition=condition,
                                    wer={f"wer_{n}": rate for n, rate in wer.items()}, used=used,
                                    normalization_share=share))
    return out


STATISTICS.register(Statistic("normalizers", "normalizers.csv", NormalizerEffect,
                              lambda given: effects(given.scores.utterances, given.scores.normalizer,
                                                                   given.scores.language)))
