"""Two runs compared: is B (a new version of a voice) better or worse than A, on the same sentences, heard and
scored by the same evaluator? (the release gate of compare-runs)

Each run is read as it sealed itself (gate/sealed.py). Two runs can be compared only when they were scored alike: the same engine models, decoding options, normalizer,
headline WER, measure models and scoring revision (`refusals`); the voice, and whatever produced the audio, may
differ, since they are what is compared. Groups are matched by engine and condition, voices by name (or the one
voice of each run, or as the user pairs them), utterances by sentence id with the same reference text. Every metric
both runs have (the headline WER, CER, each measure column) gets Δ = B − A with a paired bootstrap interval over
sentences, a paired test (MAPSSWE for micro WER, the exact Wilcoxon signed-rank for the others; sc_stats' sign
and normal Wilcoxon beside, for reference only), Holm-corrected over every independent comparison made, and what
this many sentences could detect (paired.power). A column that is a function of another compared column (a
`calibrated_*` straight line of a measure) is shown but is not a test of its own: it takes its source's verdict.
Where the family is so large, or the sentences so few, that no metric could reach significance, `reach` says so."""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, fields, replace

import numpy as np

from pipeline.asr.base import ASRConfig
from pipeline.core import records
from pipeline.core.records import ALIGNED, grouped, label, utterance_id
from pipeline.gate.sealed import Run
from pipeline.io.conditions import SILENCE
from pipeline.scoring import paired
from pipeline.scoring.align import Alignment
from pipeline.scoring.paired import ALPHA
from pipeline.scoring.utterances import ScoredUtterance
from pipeline.statistics.comparisons import per_sentence, rounded, significant_digits, undetected


MARGINS = {"wer": 0.01, "macro_wer": 0.01, "cer": 0.01,  # absolute; any measure column: MEASURE_MARGIN
           "listeners_cmos": 0.1, "listeners_ab": 0.1,  # CMOS points; preference for B, −1 … +1
           "listeners_wer": 0.01}  # the listeners' WER of a sentence, as the engines' WER
LOWER_IS_BETTER = {"wer", "macro_wer", "cer", "listeners_wer"}  # and each measure that says so
MEASURE_MARGIN = 0.05
# the asr section's fields that do not change a transcript: the engines (compared one by one) and the speed-only ones
NOT_DECODING = {"engines"} | {f.name for f in fields(ASRConfig) if f.metadata.get("speed_only")}


@dataclass(frozen=True, slots=True, kw_only=True)
class Unmatched:
    """A sentence of one run that compare-runs could not pair with the other run's."""
    sentence_id: str
    asr_condition: tuple[str, str] = grouped()  # engine | condition: a matched group less its voices
    reason: str  # only in <run>, the reference text differs, or not scored in <run>


@dataclass(frozen=True, slots=True, kw_only=True)
class RunComparison:
    """One metric of one matched group, run B against run A (`run_pipeline.py compare-runs`)."""
    asr_condition: tuple[str, str] = grouped()  # engine | condition: a matched group less its voices
    voice_a: str
    voice_b: str
    metric: str  # wer (micro) or macro_wer, as the runs' headline; cer; or a measure column
    sentences: int  # paired sentences with a value in both runs
    a: float | None  # the metric in A over those sentences: pooled for wer and cer, the mean for a measure
    b: float | None
    delta: float | None  # b − a
    ci95_low: float | None  # paired bootstrap over sentences
    ci95_high: float | None
    test: str  # the test behind p: MAPSSWE for wer, the exact Wilcoxon signed-rank otherwise
    p: float
    p_holm: float  # Holm-corrected over every independent comparison of the two runs (a derived column: its source's)
    mapsswe_z: float | None
    sign_b_worse: int | None  # wer only: sentences where B's WER is higher
    sign_b_better: int | None
    sign_p: float | None
    wilcoxon_z: float | None  # sc_stats' normal approximation, shown so that it can be set beside sc_stats; the
    wilcoxon_p: float  # gate decides with `p`
    worse: bool  # B significantly worse (p_holm < 0.05, the CI excludes 0) by more than the margin
    margin: float  # the least change that counts against B (--margin)
    verdict: str
    detectable_delta: float | None = None  # the smallest |Δ| these sentences detect with 80% power at α 0.05 (a
    # paired t-test on the per-sentence differences; docs/statistics.md)
    sentences_needed: int | None = None  # sentences it would take to detect the observed Δ so; empty when Δ is 0
    derived_from: str = ""  # the compared column this one is a function of: not a test of its own


def metrics(*runs: Run, human: Human | None = None) -> list[str]:
    """The metrics a comparison of these runs can have: the headline WER they were scored with (wer for micro,
    macro_wer), CER, every measure column, and the listeners' score where a listening test rated both."""
    out = [*("macro_wer" if run.headline == "macro" else "wer" for run in runs), "cer"]
    for run in runs:
        out += [c for d in run.measures.values() for c in d.columns]
    return list(dict.fromkeys(out + ([human.metric] if human else [])))


Heard = tuple[str, str, str]  # (run folder, voice, condition): where a rated clip came from


@dataclass(frozen=True)
class Human:
    """A listening test's ratings of both runs' audio: for a test of each clip alone (MOS, SMOS; a transcription
    test's WER), each sentence's mean vote by run, voice and condition; for a test of pairs (CMOS, A/B), each vote's
    preference for the second of the pair it rated (CMOS: −3 … +3; A/B: −1, 0, +1)."""
    metric: str  # listeners_mos, listeners_smos, listeners_wer, listeners_cmos, listeners_ab
    test: str
    means: dict[Heard, dict[str, float]] = field(default_factory=dict)  # → sentence → mean vote
    votes: dict[tuple[Heard, Heard], list[tuple[str, str, float]]] = field(default_factory=dict)
    # (first, second) → (listener, sentence, preference for the second)
    scale: tuple[float, float] = (1.0, 5.0)  # the ends of what a vote (or a preference) can be
    per_sentence: str = "each sentence's mean vote"  # what `means` holds of a sentence, in words

    def of(self, run: Run, voice: str, condition: str) -> dict[str, float]:
        return self.means.get((run.where, voice, condition), {})

    def preferences(self, a: Run, voice_a: str, b: Run, voice_b: str, condition: str) -> list[tuple[str, str, float]]:
        """Each vote on these two as a preference for B (the pair's order put right)."""
        ka, kb = (a.where, voice_a, condition), (b.where, voice_b, condition)
        return self.votes.get((ka, kb), []) + [(l, s, -v) for l, s, v in self.votes.get((kb, ka), [])]


def evaluator(run: Run, engines: list[str]) -> dict[str, object]:
    """What scored a run: each field that must be equal for two runs to be compared."""
    decoding = {k: v for k, v in run.manifest.setting("asr", {}).items() if k not in NOT_DECODING}
    out: dict[str, object] = {"scoring revision": run.manifest.computation.scoring_revision,
                              "normalizer": run.manifest.setting("score.normalize"),
                              "language and its unit": f"{run.scores.language} ({run.scores.unit}s)",
                              "headline WER": run.headline,
                              "decoding options": {**decoding, "device": run.manifest.setting("device")}}
    out.update({f"engine {e} (its model files' sha256)": run.model(e) for e in engines})
    return out


def refusals(a: Run, b: Run) -> list[str]:
    """Each way the two runs' evaluators differ; empty when they can be compared."""
    shared = [e for e in a.engines if e in b.engines]
    if not shared:
        return [f"no ASR engine in common: {a.name} was heard by {', '.join(a.engines)}, {b.name} by "
                f"{', '.join(b.engines)}"]
    ea, eb = evaluator(a, shared), evaluator(b, shared)
    out = [f"{key}: {ea[key]!r} in {a.name}, {eb[key]!r} in {b.name}" for key in ea if ea[key] != eb[key]]
    for spec in set(a.measure_specs()) & set(b.measure_specs()):
        if a.model(spec) != b.model(spec):
            out.append(f"measure {spec}: its model files differ between {a.name} and {b.name}")
    return out


@dataclass
class Pairing:
    """The groups compared, and what could not be paired."""
    groups: list[tuple[tuple, tuple]] = field(default_factory=list)  # ((voice, asr, condition) in A, … in B)
    unmatched: list[Unmatched] = field(default_factory=list)


def pair_groups(a: Run, b: Run, voices: dict[str, str]) -> Pairing:
    """Groups matched by engine and condition; voices by `voices` (A's name → B's), else by name, else the one
    voice each run has."""
    ga = {u.group for u in a.utterances if u.condition != SILENCE}
    gb = {u.group for u in b.utterances if u.condition != SILENCE}
    out = Pairing()
    for engine, condition in sorted({(g[1], g[2]) for g in ga} & {(g[1], g[2]) for g in gb}):
        va = sorted(g[0] for g in ga if g[1:] == (engine, condition))
        vb = sorted(g[0] for g in gb if g[1:] == (engine, condition))
        if voices:
            matched = [(x, voices[x]) for x in va if voices.get(x) in vb]
        elif set(va) & set(vb):
            matched = [(x, x) for x in va if x in vb]
        elif len(va) == len(vb) == 1:
            matched = [(va[0], vb[0])]
        else:
            matched = []
        out.groups += [((x, engine, condition), (y, engine, condition)) for x, y in matched]
    return out


@dataclass(frozen=True, kw_only=True)
class Change:
    """One sentence scored in both runs: how each heard it."""
    asr_condition: tuple[str, str]
    a: ScoredUtterance
    b: ScoredUtterance
    alignment_a: Alignment
    alignment_b: Alignment

    @property
    def delta_wer(self) -> float | None:
        """B's WER less A's; None for a sentence with nothing to say (no reference word), which has no WER."""
        if self.a.wer is None or self.b.wer is None:
            return None
        return self.b.wer - self.a.wer

    @property
    def delta_errors(self) -> int:
        return (self.b.errors or 0) - (self.a.errors or 0)

    @property
    def worse_by(self) -> float:
        """How much worse B heard this sentence: its ΔWER. Where there is nothing to say every word written is an
        error and the WER would be infinite, so a run that wrote more words there is worse than any ΔWER can say."""
        if self.delta_wer is not None:
            return self.delta_wer
        return math.copysign(math.inf, self.delta_errors) if self.delta_errors else 0.0


@dataclass(frozen=True, kw_only=True)
class Matched:
    """A group matched between the runs: its engine and condition, and each run's voice in it."""
    asr_condition: tuple[str, str]
    voice_a: str
    voice_b: str


@dataclass(frozen=True, kw_only=True)
class _Metric:
    """One metric of one matched group before the correction over every comparison."""
    matched: Matched
    sentences: int
    metric: str
    a: float | None
    b: float | None
    delta: tuple[float | None, float | None, float | None]  # Δ and its interval
    test: str
    p: float
    mapsswe_z: float | None
    sign: paired.Sign | None
    wilcoxon: paired.Wilcoxon
    power: paired.Power
    derived_from: str = ""


def compare(a: Run, b: Run, voices: dict[str, str] | None = None, n_boot: int = 1000, seed: int = 1337,
            margins: dict[str, float] | None = None,
            human: Human | None = None) -> tuple[list[RunComparison], Pairing, list[Change]]:
    """The comparisons, the pairing with what could not be paired, and each shared sentence's change (for the
    listening page). The WER compared is the headline the runs were scored with: micro (pooled, MAPSSWE) or
    macro (the mean of per-sentence WER, Wilcoxon). With `human`, the listeners' mean vote of each sentence rated
    in both is one more metric, once for each pair of voices and condition."""
    margins = {**MARGINS, **(margins or {})}
    pairing = pair_groups(a, b, voices or {})
    by_b = {u.id: u for u in b.utterances}
    found, changes = [], []
    rated: set[tuple[str, str, str]] = set()  # the listeners' metric, once for each pair of voices and condition
    for group_a, group_b in pairing.groups:
        in_a = {u.sentence_id: u for u in a.utterances if u.group == group_a}
        ids_b = {u.sentence_id for u in b.utterances if u.group == group_b}
        shared = []
        voice, engine, condition = group_b
        unmatched = functools.partial(Unmatched, asr_condition=(engine, condition))
        for s, ua in in_a.items():  # B's row of the same sentence, heard alike, in B's voice: by its id
            ub = by_b.get(utterance_id(sentence_id=s, voice=voice, condition=condition, asr=engine))
            if ub is None:
                pairing.unmatched.append(unmatched(sentence_id=s, reason=f"only in {a.name}"))
            elif ua.reference != ub.reference:
                pairing.unmatched.append(unmatched(sentence_id=s, reason="the reference text differs"))
            elif ua.status not in ALIGNED or ub.status not in ALIGNED:
                pairing.unmatched.append(unmatched(
                    sentence_id=s, reason=f"not scored in {a.name if ua.status not in ALIGNED else b.name}"))
            else:
                shared.append((ua, ub))
        pairing.unmatched += [unmatched(sentence_id=s, reason=f"only in {b.name}")
                              for s in sorted(ids_b - set(in_a))]
        if not shared:
            continue
        which = Matched(asr_condition=(engine, condition), voice_a=group_a[0], voice_b=voice)
        if a.headline == "macro":  # over the sentences that have a WER: a reference word or more
            with_rates = [(x, y) for x, y in shared if x.wer is not None and y.wer is not None]
            if with_rates:
                found.append(_paired_values(which, "macro_wer", [x.wer for x, _ in with_rates],
                                            [y.wer for _, y in with_rates], n_boot, seed))
        elif any(x.ref_words for x, _ in shared):  # a pooled rate needs a reference word among the sentences
            found.append(_wer(a, b, shared, which, n_boot, seed))
        if any(x.ref_chars for x, _ in shared):
            found.append(_paired_values(which, "cer", [x.cer for x, _ in shared], [y.cer for _, y in shared],
                                        n_boot, seed, [x.ref_chars or 0 for x, _ in shared],
                                        [x.char_errors or 0 for x, _ in shared],
                                        [y.char_errors or 0 for _, y in shared]))
        for column in dict.fromkeys(c for x, _ in shared for c in x.measures):
            both = [(x.measures.get(column), y.measures.get(column)) for x, y in shared]
            both = [(p, q) for p, q in both if p is not None and q is not None]
            if both:
                found.append(_paired_values(which, column, [p for p, _ in both], [q for _, q in both], n_boot, seed))
        if human and (group_a[0], group_b[0], condition) not in rated:
            ids = {x.sentence_id for x, _ in shared}
            if human.votes:
                prefs = [v for v in human.preferences(a, group_a[0], b, group_b[0], condition) if v[1] in ids]
                if prefs:
                    rated.add((group_a[0], group_b[0], condition))
                    found.append(_preference(which, human.metric, prefs, human.scale, n_boot, seed))
            else:
                ha, hb = human.of(a, group_a[0], condition), human.of(b, group_b[0], condition)
                both = sorted(set(ha) & set(hb) & ids)
                if both:
                    rated.add((group_a[0], group_b[0], condition))
                    found.append(_paired_values(which, human.metric, [ha[s] for s in both], [hb[s] for s in both],
                                                n_boot, seed))
        changes += [Change(asr_condition=(engine, condition), a=x, b=y, alignment_a=a.scores.alignment(x),
                           alignment_b=b.scores.alignment(y)) for x, y in shared]
    better = {c: d.better for d in a.measures.values() for c in d.columns}
    found = _derived(found, {c: f for d in a.measures.values() for c, f in d.derived.items()})
    tested = [m for m in found if not m.derived_from]
    reachable = iter(paired.within_reach([m.power for m in tested], floors(tested)))
    found = [m if m.derived_from else replace(m, power=next(reachable)) for m in found]
    tested = [m for m in found if not m.derived_from]
    corrected = dict(zip(map(id, tested), paired.holm([m.p for m in tested])))
    source = {(m.matched, m.metric): corrected[id(m)] for m in tested}
    out = []
    for m in found:
        p_holm = corrected.get(id(m)) if not m.derived_from else \
            source[m.matched, m.derived_from]
        p_holm = significant_digits(p_holm)
        delta, low, high = (rounded(x) for x in m.delta)
        higher_is_worse = m.metric in LOWER_IS_BETTER or better.get(m.metric) == "lower"
        margin = margins.get(m.metric, MEASURE_MARGIN)
        worse_by = delta if higher_is_worse else -delta
        significant = p_holm < ALPHA and low is not None and (low > 0 or high < 0)
        worse = significant and worse_by > margin and not m.derived_from
        out.append(RunComparison(
            asr_condition=m.matched.asr_condition, voice_a=m.matched.voice_a, voice_b=m.matched.voice_b,
            metric=m.metric, sentences=m.sentences, a=m.a, b=m.b,
            delta=delta, ci95_low=low, ci95_high=high, test=m.test, p=significant_digits(m.p), p_holm=p_holm,
            mapsswe_z=m.mapsswe_z, sign_b_worse=m.sign.positive if m.sign else None,
            sign_b_better=m.sign.negative if m.sign else None,
            sign_p=significant_digits(m.sign.p) if m.sign else None, wilcoxon_z=rounded(m.wilcoxon.z, 3),
            wilcoxon_p=significant_digits(m.wilcoxon.p), worse=worse, margin=margin,
            verdict=verdict(m, delta, low, high, p_holm, significant, worse_by, worse, margin),
            detectable_delta=rounded(m.power.detectable), sentences_needed=m.power.needed,
            derived_from=m.derived_from))
    changes.sort(key=lambda c: (-c.worse_by, -c.delta_errors))
    return out, pairing, changes


def verdict(m: _Metric, delta: float, low: float | None, high: float | None, p_holm: float, significant: bool,
            worse_by: float, worse: bool, margin: float) -> str:
    """One line: which way B differs from A in one metric, whether it counts against B, and, where no difference
    was found, what this many sentences could have found."""
    figures = f"Δ = {delta:+.4f}" + (f" [{low:+.4f}, {high:+.4f}]" if low is not None else "") + f", p = {p_holm:.3g}"
    matched = m.matched
    head = f"{label(matched.asr_condition)}: {matched.voice_b or 'B'} against {matched.voice_a or 'A'}, {m.metric}"
    if m.derived_from:
        return f"{head}: {figures}; a function of {m.derived_from}, not a test of its own (its verdict is " \
               f"{m.derived_from}'s)"
    if not significant or worse_by == 0:
        power = replace(m.power, detectable=rounded(m.power.detectable))
        return f"{head}: no significant difference, {figures}" + undetected(m.sentences, delta, power, 4)
    if worse_by < 0:
        return f"{head}: better, {figures}"
    return f"{head}: worse, {figures}" + ("" if worse else f" (within the margin {margin})")


def _wer(a: Run, b: Run, shared: list, which: Matched, n_boot: int, seed: int) -> _Metric:
    words = [x.ref_words for x, _ in shared]
    ea, eb = [x.errors for x, _ in shared], [y.errors for _, y in shared]
    delta = paired.paired_bootstrap(ea, eb, words, n_boot, seed)
    m = paired.mapsswe([(a.scores.codes(x), b.scores.codes(y)) for x, y in shared])
    pa, pb = per_sentence([x for x, _ in shared], [y for _, y in shared])
    return _Metric(matched=which, sentences=len(shared), metric="wer", a=rounded(sum(ea) / sum(words)),
                   b=rounded(sum(eb) / sum(words)), delta=delta, test="MAPSSWE", p=m.p, mapsswe_z=rounded(m.z, 3),
                   sign=paired.sign_test(pb, pa), wilcoxon=paired.wilcoxon(pb, pa),
                   power=paired.power(paired.pooled_contributions(ea, eb, words), delta[0], ALPHA))


def _paired_values(which: Matched, metric: str, va: list, vb: list, n_boot: int, seed: int,
                   totals: list | None = None, ta: list | None = None, tb: list | None = None) -> _Metric:
    """Δ of a pooled rate (totals given: Σ errors / Σ totals) or of a mean, with a paired bootstrap interval, and
    the Wilcoxon signed-rank test on the per-sentence values."""
    if totals is not None:
        delta = paired.paired_bootstrap(ta, tb, totals, n_boot, seed)
        mean_a, mean_b = sum(ta) / max(1, sum(totals)), sum(tb) / max(1, sum(totals))
        contributions = paired.pooled_contributions(ta, tb, totals)
    else:
        delta = paired.paired_bootstrap(va, vb, [1] * len(va), n_boot, seed)
        mean_a, mean_b = float(np.mean(va)), float(np.mean(vb))
        contributions = [q - p for p, q in zip(va, vb)]
    pairs = [(p, q) for p, q in zip(va, vb) if p is not None and q is not None]
    w = paired.wilcoxon([q for _, q in pairs], [p for p, _ in pairs])
    exact = paired.signed_rank([q - p for p, q in pairs])
    return _Metric(matched=which, sentences=len(va), metric=metric, a=rounded(mean_a), b=rounded(mean_b),
                   delta=delta, test=exact.test, p=exact.p, mapsswe_z=None, sign=None, wilcoxon=w,
                   power=paired.power(contributions, delta[0], ALPHA))


def _preference(which: Matched, metric: str, votes: list[tuple[str, str, float]], scale: tuple[float, float],
                n_boot: int, seed: int) -> _Metric:
    """A pair test's votes on A and B as one metric: Δ, the mean preference for B, with the listeners × sentences
    bootstrap; the exact signed-rank test on the sentences' mean preferences."""
    listeners, sentences, values = zip(*votes)
    found = paired.unanimous(paired.two_way(list(values), list(listeners), list(sentences), n_boot, seed),
                             list(values), *scale, min(len(set(listeners)), len(set(sentences))))
    by: dict[str, list[float]] = {}
    for _, s, v in votes:
        by.setdefault(s, []).append(v)
    means = [float(np.mean(v)) for v in by.values()]
    exact = paired.signed_rank(means)
    return _Metric(matched=which, sentences=len(by), metric=metric, a=None, b=None,
                   delta=(found.mean, found.low, found.high), test=exact.test + " on the sentences' means", p=exact.p,
                   mapsswe_z=None, sign=None, wilcoxon=paired.wilcoxon(means, [0.0] * len(means)),
                   power=paired.power(means, found.mean, ALPHA))


def _derived(found: list[_Metric], derived: dict[str, str]) -> list[_Metric]:
    """Each metric that is a function of another metric of the same comparison, marked so."""
    present = {(m.matched, m.metric) for m in found}
    return [replace(m, derived_from=derived[m.metric]) if (m.matched, derived.get(m.metric)) in present else m
            for m in found]


@dataclass(frozen=True)
class Reach:
    """What the gate can detect at all: the smallest Holm-corrected p each metric could reach with its sentences
    and the family's size, and which cannot reach ALPHA however bad B is."""
    tests: int
    smallest: dict[str, float]  # metric → the smallest p it could reach, corrected
    cannot: list[str]  # metrics that cannot fail the gate

    def said(self, sentences: int) -> str:
        if not self.cannot:
            return ""
        if len(self.cannot) == len(self.smallest):
            floor = min(self.smallest.values())
            return (f"with {sentences} sentences and {self.tests} metrics the smallest p is {floor:.3g} (≥ {ALPHA}): "
                    "the gate cannot fail; give it more sentences")
        return (f"with these sentences and {self.tests} metrics, {', '.join(self.cannot)} cannot reach p < {ALPHA} "
                f"(smallest {min(self.smallest[c] for c in self.cannot):.3g}): only the other metrics can fail the gate")


def floors(tested: list) -> list[float]:
    """Each test's own smallest p, before correction: none for MAPSSWE (a t statistic), 2 / 2ⁿ for the exact
    signed-rank test of n sentences."""
    return [0.0 if t.test == "MAPSSWE" else paired.smallest_p(t.sentences) for t in tested]


def reach(rows: list[RunComparison]) -> Reach:
    tested = [r for r in rows if not r.derived_from]
    smallest = {}
    for r, floor in zip(tested, paired.holm(floors(tested))):  # each at its floor: Holm's least for every test
        key = r.metric if r.metric not in smallest else f"{r.metric} ({r.voice_b} against {r.voice_a})"
        smallest[key] = floor
    return Reach(len(tested), smallest, [m for m, p in smallest.items() if p >= ALPHA])


def as_json(a: Run, b: Run, rows: list[RunComparison], pairing: Pairing) -> dict:
    return {"a": str(a.folder), "b": str(b.folder), "evaluator": evaluator(a, [e for e in a.engines if e in b.engines]),
            "comparisons": [records.as_row(r) for r in rows],
            "unmatched": {"count": len(pairing.unmatched), "sentences": [records.as_row(u) for u in pairing.unmatched]}}
