"""What a listening test says, from its votes (`listen results`, the report's listeners section, compare-runs):

- P.808's acceptance rules, per listener: every recording played to its end (as the server saw it: plays.py),
  every trapping trial answered as it asked, every gold trial within one point of its answer (a pair's
  preference: its answer), and ratings that vary (variance at least MIN_VARIANCE); a listener who breaks one is
  left out, with each of their votes, and why: each trial named by its place in their session, with the answer
  given against the one expected;
- MOS (or SMOS) per system with a 95% CI from a bootstrap that resamples listeners and sentences together (a
  sentence's clips in every system move together), so that the interval holds for other listeners and other
  sentences, not only these;
- CMOS per pair of systems with the same CI and a paired test (Wilcoxon signed-rank on the sentences' means); A/B
  preference with a two-sided binomial test; Bradley-Terry strengths with bootstrap CIs when more than two systems
  are compared;
- the listeners' agreement, Krippendorff's alpha (interval);
- every automatic measure of the runs checked against the listeners: MSE, LCC, SRCC and KTAU at the utterance and
  at the system level, as the VoiceMOS Challenge computes them (unilight/sheet's calculate_metrics.py), each with
  a bootstrap CI; and a calibration: the least-squares line from the measure to this panel's scale, with its
  uncertainty and the range of the measure it was fitted on."""
from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np

from pipeline.core.records import columns_of, joined
from pipeline.listen import plays, qualify
from pipeline.listen.kinds import KINDS, Kind
from pipeline.listen.database import Test
from pipeline.measures.base import MEASURES
from pipeline.measures.calibration import Calibration
from pipeline.scoring import paired
from pipeline.scoring.paired import resampled_weights

if TYPE_CHECKING:
    from pipeline.gate.release import Human

MIN_VARIANCE = 0.15  # P.808's toolkit: a listener whose ratings hardly vary did not listen
N_BOOT = 1000
SEED = 1337


@dataclass(frozen=True)
class Vote:
    listener: int
    name: str  # the listener's
    trial: str
    role: str
    raw: int | str  # as clicked, or as typed
    value: int | str  # as the trial reads, once a pair's order is put right
    expected: int | str | None
    sentence: str
    first: str  # clip ids, in the order the test made them
    second: str | None
    played: bool  # every recording of the trial played to its end before the vote
    position: int  # in the listener's session, from 1
    reference: str = ""  # the sentence of the trial's (first) clip, as the run had it
    language: str = "en"  # the test's: its runs' language (a test made before tests had one: English)


@dataclass(frozen=True, kw_only=True)
class SystemScore:
    system: str  # run/voice
    votes: int
    clips: int
    mean: float | None
    ci95_low: float | None
    ci95_high: float | None


@dataclass(frozen=True, kw_only=True)
class Difference:
    """Two systems of a test of each clip alone: B's mean vote minus A's, on the sentences both were rated on."""
    a: str
    b: str
    sentences: int
    delta: float | None
    ci95_low: float | None  # listeners × sentences bootstrap
    ci95_high: float | None
    test: str  # the exact signed-rank test on the sentences' mean votes
    p: float


@dataclass(frozen=True, kw_only=True)
class Excluded:
    listener: str
    votes: int
    reasons: list[str] = joined(sep="; ")  # each rule the listener failed, naming the trial and the answer


@dataclass(frozen=True, kw_only=True)
class ClipScore:
    """A test clip: where it came from, its accepted votes' mean, and its run's measures of it (clips.csv)."""
    clip: str
    system: str
    run: str
    voice: str
    sentence: str
    utterance_id: str
    votes: int
    mean: float
    measures: dict[str, float | None] = columns_of()
    run_folder: str = ""  # the run's folder, resolved, as the test recorded it
    source_sha256: str = ""  # of the run's audio the clip was made from


@dataclass(frozen=True, kw_only=True)
class PairScore:
    """Two systems compared on the same sentences: B against A (CMOS: B's quality relative to A's, −3…+3; A/B:
    the share of votes that prefer B)."""
    a: str
    b: str
    votes: int
    mean: float | None  # CMOS: the mean of B − A; A/B: the share preferring B among the votes with a preference
    ci95_low: float | None  # listeners × sentences bootstrap
    ci95_high: float | None
    prefer_a: int
    prefer_b: int
    no_preference: int
    share_b: float | None  # A/B: the same share as `mean`, under the name #54's files gave it
    test: str  # the exact signed-rank test on the sentences' mean preferences
    p: float | None
    # the mean preference for B on the kind's scale (CMOS: as `mean`; A/B: −1 all A, 0 none, +1 all B), what the
    # test and the gate decide on, with its listeners × sentences bootstrap
    preference: float | None
    preference_ci95_low: float | None
    preference_ci95_high: float | None


@dataclass(frozen=True, kw_only=True)
class Strength:
    system: str
    score: float  # Bradley-Terry log-strength, the systems' mean at 0
    ci95_low: float | None
    ci95_high: float | None


@dataclass(frozen=True, kw_only=True)
class Agreement:
    """One automatic measure against the listeners, as the VoiceMOS Challenge scores a predictor."""
    measure: str
    level: str  # utterance or system
    n: int
    mse: float | None
    mse_ci95_low: float | None
    mse_ci95_high: float | None
    lcc: float | None
    lcc_ci95_low: float | None
    lcc_ci95_high: float | None
    srcc: float | None
    srcc_ci95_low: float | None
    srcc_ci95_high: float | None
    ktau: float | None
    ktau_ci95_low: float | None
    ktau_ci95_high: float | None


@dataclass
class Analysis:
    test: str
    kind: str
    listeners: int
    accepted: int
    votes: int  # test votes of accepted listeners
    excluded: list[Excluded] = field(default_factory=list)
    systems: list[SystemScore] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)
    pairs: list[PairScore] = field(default_factory=list)
    strengths: list[Strength] = field(default_factory=list)
    alpha: float | None = None  # Krippendorff's, interval
    agreements: list[Agreement] = field(default_factory=list)
    calibrations: list[Calibration] = field(default_factory=list)
    clips: list[ClipScore] = field(default_factory=list)
    tables: dict[str, list] = field(default_factory=dict)  # the kind's own records, each table as <name>.csv

    def as_json(self) -> dict:
        return asdict(self)


def votes_of(conn: sqlite3.Connection, kind: Kind) -> list[Vote]:
    events: dict[tuple[int, str], list[plays.Event]] = defaultdict(list)  # (listener, trial); fetches: ""
    for r in conn.execute("SELECT listener, trial, clip, event, at FROM plays ORDER BY at, rowid"):
        events[r[0], r[1]].append(plays.Event(r[2], r[3], r[4]))
    seconds = dict(conn.execute("SELECT id, seconds FROM clips").fetchall())
    spoken = language_of(Test.read(conn).settings)
    positions = {(r[0], r[1]): r[2] + 1 for r in conn.execute("SELECT listener, trial, position FROM assignments")}
    out = []
    for r in conn.execute("SELECT v.listener, l.name, v.trial, t.role, coalesce(v.value, v.text), t.expected, "
                          "t.sentence_id, t.first, t.second, t.swapped, c.reference_text FROM votes v JOIN trials t "
                          "ON t.id = v.trial JOIN listeners l ON l.id = v.listener JOIN clips c ON c.id = t.first "
                          "ORDER BY v.at"):
        seen = sorted(events[r[0], r[2]] + events[r[0], ""], key=lambda e: e.at)
        played = all(plays.heard(seen, c, seconds[c]) for c in (r[7], r[8]) if c)
        out.append(Vote(r[0], r[1], r[2], r[3], r[4], kind.oriented(r[4], bool(r[9])), r[5], r[6], r[7], r[8], played,
                        positions.get((r[0], r[2]), 0), r[10], spoken))
    return out


def acceptance(votes: list[Vote], kind: Kind) -> dict[int, list[str]]:
    """Each listener who breaks a rule, and which: the trials by their place in the listener's session, with the
    answer given (as clicked) against the one expected."""
    by: dict[int, list[Vote]] = defaultdict(list)
    for v in votes:
        by[v.listener].append(v)
    out = {}
    for listener, own in by.items():
        reasons = []
        unplayed = sorted(v.position for v in own if not v.played)
        if unplayed:
            reasons.append(f"{len(unplayed)} trial(s) answered before every recording was played to its end "
                           f"(trial {', '.join(map(str, unplayed))})")
        traps = [v for v in own if v.role == "trap"]
        wrong = [v for v in traps if not kind.answered_as_asked(v)]
        if wrong:
            reasons.append(f"{len(wrong)} of {len(traps)} trapping trial(s) answered otherwise than asked: " +
                           "; ".join(f"trial {v.position} answered {kind.said(v.raw)}, asked for "
                                     f"{kind.said(v.expected)}" for v in sorted(wrong, key=lambda v: v.position)))
        golds = [v for v in own if v.role == "gold"]
        off = [v for v in golds if kind.gold_missed(v)]
        if off:
            reasons.append(f"{len(off)} of {len(golds)} gold trial(s) {kind.gold_rule}: " +
                           "; ".join(f"trial {v.position} answered {kind.said(v.value)}, expected "
                                     f"{kind.said(v.expected)}" for v in sorted(off, key=lambda v: v.position)))
        reasons += qualify.failed([v for v in own if v.role == qualify.ROLE])
        rated = [v.value for v in own if v.role == "test"]
        if kind.varies and len(rated) >= 2 and np.var(rated) < MIN_VARIANCE:
            reasons.append(f"ratings that hardly vary (variance {np.var(rated):.2f} < {MIN_VARIANCE})")
        if reasons:
            out[listener] = reasons
    return out


def language_of(settings: dict) -> str:
    """A test's language: its runs' (listen create), English for a test made before tests had one or of runs in
    several."""
    return settings.get("language") or "en"


def clip_table(conn: sqlite3.Connection) -> dict[str, dict]:
    """Each test clip: where it came from (`voiced`: its system less the condition it was heard in), what the runs
    knew of it, and its sentence's set (`--sets`), if any."""
    settings = Test.read(conn).settings
    sets = settings.get("sets") or {}
    # a test made before a system could be a voice in one of several conditions: each its own, in the one rated
    heard_in = settings.get("conditions") or {}
    return {r["id"]: {"system": r["system"], "sentence": r["sentence_id"], "run": r["run"],
                      "set": sets.get(r["sentence_id"], ""),
                      "voiced": heard_in.get(r["system"], [r["system"], settings["condition"]])[0],
                      "condition": heard_in.get(r["system"], [r["system"], settings["condition"]])[1],
                      "run_folder": r["run_folder"], "voice": r["voice"], "utterance_id": r["utterance_id"],
                      "source_sha256": r["source_sha256"], "measures": json.loads(r["measures"]),
                      "reference": r["reference_text"], "heard": json.loads(r["heard"]),
                      "perplexity": r["perplexity"], "surprisal": json.loads(r["surprisal"]),
                      "language": language_of(settings)}
            for r in conn.execute("SELECT id, system, sentence_id, run, run_folder, voice, utterance_id, "
                                  "source_sha256, measures, reference_text, heard, perplexity, surprisal FROM clips "
                                  "WHERE role = 'test'")}


def interval(draws: np.ndarray) -> tuple[float | None, float | None]:
    draws = draws[np.isfinite(draws)]
    if not len(draws):
        return None, None
    low, high = np.percentile(draws, [2.5, 97.5])
    return round(float(low), 4), round(float(high), 4)


def index(values: list) -> tuple[np.ndarray, list]:
    names = sorted(set(values))
    at = {n: i for i, n in enumerate(names)}
    return np.array([at[v] for v in values]), names


def coded(kept: list[Vote], clips: dict, n_boot: int, seed: int) -> tuple:
    """The votes of a test of each clip alone as arrays: listener, sentence and system codes, the system names,
    the values, and the listeners × sentences bootstrap's weights."""
    listeners, _ = index([v.listener for v in kept])
    items, _ = index([v.sentence for v in kept])
    systems, names = index([clips[v.second or v.first]["system"] for v in kept])
    return (listeners, items, systems, names, np.array([v.value for v in kept], dtype=float),
            resampled_weights(listeners, items, n_boot, seed))


def system_scores(kept: list[Vote], clips: dict, kind: Kind, n_boot: int, seed: int) -> list[SystemScore]:
    """Each system's mean vote, with the listeners-and-sentences bootstrap."""
    if not kept:
        return []
    listeners, items, systems, names, values, weights = coded(kept, clips, n_boot, seed)
    out = []
    for s, name in enumerate(names):
        mine = systems == s
        w = weights[:, mine]
        with np.errstate(invalid="ignore", divide="ignore"):
            means = (w * values[mine]).sum(axis=1) / w.sum(axis=1)
        found = paired.unanimous(paired.TwoWay(float(values[mine].mean()), *interval(means)), list(values[mine]),
                                 min(kind.values), max(kind.values),
                                 min(len(set(listeners[mine])), len(set(items[mine]))))
        out.append(SystemScore(system=name, votes=int(mine.sum()),
                               clips=len({v.second or v.first for v, m in zip(kept, mine) if m}),
                               mean=round(found.mean, 4), ci95_low=_round(found.low), ci95_high=_round(found.high)))
    return out


def differences(kept: list[Vote], clips: dict, n_boot: int, seed: int) -> list[Difference]:
    """Every pair of systems of a test of each clip alone: B − A with the listeners × sentences bootstrap (a draw
    keeps the same listeners and sentences for both), and the exact signed-rank test on the sentences' means."""
    if not kept:
        return []
    _, items, systems, names, values, weights = coded(kept, clips, n_boot, seed)
    out = []
    for i, j in combinations(range(len(names)), 2):
        shared = set(items[systems == i]) & set(items[systems == j])
        a = (systems == i) & np.isin(items, list(shared))
        b = (systems == j) & np.isin(items, list(shared))
        if not shared:
            continue
        with np.errstate(invalid="ignore", divide="ignore"):
            draws = (weights[:, b] * values[b]).sum(axis=1) / weights[:, b].sum(axis=1) - \
                (weights[:, a] * values[a]).sum(axis=1) / weights[:, a].sum(axis=1)
        per = [values[b & (items == k)].mean() - values[a & (items == k)].mean() for k in sorted(shared)]
        exact = paired.signed_rank(per)
        low, high = interval(draws)
        out.append(Difference(a=names[i], b=names[j], sentences=len(shared),
                              delta=round(float(values[b].mean() - values[a].mean()), 4), ci95_low=low,
                              ci95_high=high, test=exact.test + " on the sentences' means", p=float(f"{exact.p:.4g}")))
    return out


def pair_scores(kept: list[Vote], clips: dict, kind: Kind, n_boot: int, seed: int) -> list[PairScore]:
    """Each pair of systems: the mean preference for B (CMOS: −3 … +3; A/B: −1, 0, +1 a vote) and, for A/B, the
    share preferring B, each with the listeners × sentences bootstrap; the exact signed-rank test on the
    sentences' mean preferences."""
    by: dict[tuple[str, str], list[Vote]] = defaultdict(list)
    for v in kept:
        by[clips[v.first]["system"], clips[v.second]["system"]].append(v)
    out = []
    for (a, b), own in sorted(by.items()):
        values = [kind.preference(v.value) for v in own]
        found = bootstrapped(values, own, *kind.preference_scale, n_boot, seed)
        per = defaultdict(list)
        for v, x in zip(own, values):
            per[v.sentence].append(x)
        exact = paired.signed_rank([float(np.mean(x)) for x in per.values()])
        first, second = sum(x < 0 for x in values), sum(x > 0 for x in values)
        share = found
        if kind.shares:
            chose = [(x > 0, v) for x, v in zip(values, own) if x]
            share = bootstrapped([float(c) for c, _ in chose], [v for _, v in chose], 0.0, 1.0, n_boot, seed)
        out.append(PairScore(a=a, b=b, votes=len(own), mean=_round(share.mean), ci95_low=_round(share.low),
                             ci95_high=_round(share.high), prefer_a=first, prefer_b=second,
                             no_preference=len(own) - first - second,
                             share_b=_round(share.mean) if kind.shares else None,
                             test=exact.test + " on the sentences' means", p=float(f"{exact.p:.4g}"),
                             preference=_round(found.mean), preference_ci95_low=_round(found.low),
                             preference_ci95_high=_round(found.high)))
    return out


def bootstrapped(values: list[float], votes: list[Vote], floor: float, ceiling: float, n_boot: int,
                 seed: int) -> paired.TwoWay:
    """The votes' mean with the listeners × sentences bootstrap, honest for a unanimous panel."""
    listeners, sentences = [v.listener for v in votes], [v.sentence for v in votes]
    return paired.unanimous(paired.two_way(values, listeners, sentences, n_boot, seed), values, floor, ceiling,
                            min(len(set(listeners)), len(set(sentences))))


def _round(x: float | None) -> float | None:
    return None if x is None else round(float(x), 4)


def bradley_terry(wins: np.ndarray, iterations: int = 500) -> np.ndarray:
    """Log-strengths (mean 0) from wins[i, j], the times i was preferred to j (a tie is half to each), by Hunter's
    minorization-maximization."""
    n = len(wins)
    games = wins + wins.T
    strength = np.ones(n)
    for _ in range(iterations):
        total = wins.sum(axis=1)
        denominator = np.array([sum(games[i, j] / (strength[i] + strength[j]) for j in range(n) if j != i and
                                    games[i, j]) for i in range(n)])
        updated = np.where(denominator > 0, total / np.where(denominator > 0, denominator, 1), strength)
        updated = np.maximum(updated, 1e-12)
        updated /= np.exp(np.mean(np.log(updated)))
        if np.allclose(updated, strength, rtol=1e-10, atol=1e-12):
            break
        strength = updated
    return np.log(strength)


def strengths(kept: list[Vote], clips: dict, kind: Kind, n_boot: int, seed: int) -> list[Strength]:
    systems = sorted({clips[v.first]["system"] for v in kept} | {clips[v.second]["system"] for v in kept})
    if len(systems) < 3:
        return []
    at = {s: i for i, s in enumerate(systems)}

    def wins_of(sample: list[Vote]) -> np.ndarray:
        wins = np.zeros((len(systems), len(systems)))
        for v in sample:
            a, b = at[clips[v.first]["system"]], at[clips[v.second]["system"]]
            preference = kind.preference(v.value)
            if preference > 0:
                wins[b, a] += 1
            elif preference < 0:
                wins[a, b] += 1
            else:
                wins[a, b] += 0.5
                wins[b, a] += 0.5
        return wins

    point = bradley_terry(wins_of(kept))
    rng = np.random.default_rng(seed)
    listeners = sorted({v.listener for v in kept})
    sentences = sorted({v.sentence for v in kept})
    draws = []
    for _ in range(min(n_boot, 200)):  # each draw is an MM fit: 200 make the interval, at a few ms each
        lw = defaultdict(int, zip(*np.unique(rng.choice(listeners, len(listeners)), return_counts=True)))
        sw = defaultdict(int, zip(*np.unique(rng.choice(sentences, len(sentences)), return_counts=True)))
        sample = [v for v in kept for _ in range(lw[v.listener] * sw[v.sentence])]
        draws.append(bradley_terry(wins_of(sample)))
    draws = np.array(draws)
    return [Strength(system=s, score=round(float(point[i]), 4), ci95_low=interval(draws[:, i])[0],
                     ci95_high=interval(draws[:, i])[1]) for i, s in enumerate(systems)]


def krippendorff_interval(units: list[list[float]]) -> float | None:
    """Krippendorff's alpha for interval data: 1 − observed / expected disagreement, over the units (a trial's
    votes) that have two values or more."""
    pairable = [np.asarray(u, dtype=float) for u in units if len(u) >= 2]
    if not pairable:
        return None
    values = np.concatenate(pairable)
    n = len(values)
    observed = sum(((u[:, None] - u[None, :]) ** 2).sum() / (len(u) - 1) for u in pairable) / n
    expected = ((values[:, None] - values[None, :]) ** 2).sum() / (n * (n - 1))
    return None if expected == 0 else round(float(1 - observed / expected), 4)


def metrics(human: np.ndarray, predicted: np.ndarray) -> tuple[float, float, float, float]:
    """MSE, LCC, SRCC, KTAU, as unilight/sheet's calculate_metrics.py computes them."""
    from scipy.stats import kendalltau, spearmanr

    return (float(np.mean((human - predicted) ** 2)), float(np.corrcoef(human, predicted)[0][1]),
            float(spearmanr(human, predicted)[0]), float(kendalltau(human, predicted)[0]))


def agreements(per_clip: list[dict], measure: str, n_boot: int, seed: int) -> list[Agreement]:
    rows = [c for c in per_clip if c.measures.get(measure) is not None]
    if len(rows) < 3:
        return []
    human = np.array([c.mean for c in rows])
    predicted = np.array([c.measures[measure] for c in rows], dtype=float)
    systems = sorted({c.system for c in rows})
    which = np.array([systems.index(c.system) for c in rows])

    def system_level(idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        present = [s for s in range(len(systems)) if np.any(which[idx] == s)]
        return (np.array([human[idx][which[idx] == s].mean() for s in present]),
                np.array([predicted[idx][which[idx] == s].mean() for s in present]))

    rng = np.random.default_rng(seed)
    draws = {"utterance": [], "system": []}
    for _ in range(n_boot):
        idx = rng.integers(0, len(rows), len(rows))
        with np.errstate(invalid="ignore", divide="ignore"):
            draws["utterance"].append(metrics(human[idx], predicted[idx]))
            h, p = system_level(idx)
            if len(h) >= 3:
                draws["system"].append(metrics(h, p))
    out = []
    for level, (h, p) in (("utterance", (human, predicted)), ("system", system_level(np.arange(len(rows))))):
        if len(h) < 3:
            continue
        point = metrics(h, p)
        cis = np.array(draws[level]) if draws[level] else np.zeros((0, 4))
        figures = {}
        for k, name in enumerate(("mse", "lcc", "srcc", "ktau")):
            figures[name] = None if np.isnan(point[k]) else round(point[k], 4)
            figures[f"{name}_ci95_low"], figures[f"{name}_ci95_high"] = interval(cis[:, k])
        out.append(Agreement(measure=measure, level=level, n=len(h), **figures))
    return out


def calibration(per_clip: list[dict], measure: str, test: str, kind: Kind, n_boot: int, seed: int,
                scale: tuple[float, float] | None = None) -> Calibration | None:
    """The least-squares line from the measure to the clips' mean votes, with a bootstrap over clips; `scale`: the
    ends of what a clip's mean can be (the kind's scale unless said)."""
    rows = [c for c in per_clip if c.measures.get(measure) is not None]
    x = np.array([c.measures[measure] for c in rows], dtype=float)
    y = np.array([c.mean for c in rows])
    if len(rows) < 3 or np.ptp(x) == 0:
        return None
    slope, intercept = np.polyfit(x, y, 1)
    rng = np.random.default_rng(seed)
    fits = []
    for _ in range(n_boot):
        idx = rng.integers(0, len(x), len(x))
        if np.ptp(x[idx]) > 0:
            fits.append(np.polyfit(x[idx], y[idx], 1))
    fits = np.array(fits).reshape(-1, 2)
    (slope_low, slope_high), (intercept_low, intercept_high) = interval(fits[:, 0]), interval(fits[:, 1])
    residual = y - (intercept + slope * x)
    return Calibration(measure=measure, test=test, kind=kind.name, intercept=round(float(intercept), 4),
                       slope=round(float(slope), 4), intercept_ci95_low=intercept_low,
                       intercept_ci95_high=intercept_high, slope_ci95_low=slope_low, slope_ci95_high=slope_high,
                       residual_sd=round(float(np.std(residual, ddof=2)), 4), low=float(x.min()),
                       high=float(x.max()), clips=len(x),
                       **dict(zip(("floor", "ceiling"), scale or (float(min(kind.values)), float(max(kind.values))))))


def analyse(conn: sqlite3.Connection, n_boot: int = N_BOOT, seed: int = SEED) -> Analysis:
    test = Test.read(conn)
    kind = KINDS.get(test.kind)
    votes = votes_of(conn, kind)
    clips = clip_table(conn)
    left_out = acceptance(votes, kind)
    names = {v.listener: v.name for v in votes}
    kept = [v for v in votes if v.role == "test" and v.listener not in left_out]
    result = Analysis(test=test.name, kind=kind.name, listeners=len(names), accepted=len(names) - len(left_out),
                      votes=len(kept),
                      excluded=[Excluded(listener=names[l], votes=sum(v.listener == l for v in votes), reasons=r)
                                for l, r in sorted(left_out.items())])
    by_trial: dict[str, list[float]] = defaultdict(list)
    for v in kept:
        if isinstance(v.value, int):
            by_trial[v.trial].append(v.value)
    result.alpha = krippendorff_interval(list(by_trial.values()))
    kind.analyse(result, kept, clips, n_boot, seed)
    return result


def each_alone(result: Analysis, kept: list[Vote], clips: dict, kind: Kind, n_boot: int, seed: int) -> None:
    """A test of each clip alone on a scale: each system's mean and each pair's difference, each clip's mean
    beside its measures, and every measure that predicts the kind's scale checked against the listeners."""
    result.systems = system_scores(kept, clips, kind, n_boot, seed)
    result.differences = differences(kept, clips, n_boot, seed)
    per_clip: dict[str, list[float]] = defaultdict(list)
    for v in kept:
        per_clip[v.second or v.first].append(v.value)
    result.clips = [ClipScore(clip=c, system=clips[c]["system"], run=clips[c]["run"], voice=clips[c]["voice"],
                              sentence=clips[c]["sentence"], utterance_id=clips[c]["utterance_id"], votes=len(x),
                              mean=round(float(np.mean(x)), 4), measures=dict(sorted(clips[c]["measures"].items())),
                              run_folder=clips[c]["run_folder"], source_sha256=clips[c]["source_sha256"])
                    for c, x in sorted(per_clip.items())]
    measures = sorted({m for c in result.clips for m, value in c.measures.items() if value is not None
                       and MEASURES.predicts(m) == kind.predicts})
    for m in measures:
        result.agreements += agreements(result.clips, m, n_boot, seed)
        fit = calibration(result.clips, m, result.test, kind, n_boot, seed)
        if fit is not None:
            result.calibrations.append(fit)


def human(conn: sqlite3.Connection, runs: list) -> tuple[Human | None, list[str]]:
    """What the accepted listeners said of these runs (gate.sealed.Run), for compare-runs: each sentence's mean
    vote (MOS, SMOS), or each vote's preference between them (CMOS, A/B); and what could not be used: a clip whose
    run's audio changed since the test was made rates audio the run no longer has."""
    from pipeline.core import store

    test = Test.read(conn)
    kind = KINDS.get(test.kind)
    votes = votes_of(conn, kind)
    left_out = acceptance(votes, kind)
    clips = clip_table(conn)
    # two versions scored from one manifest share their utterances' ids: an id is a run's own
    found = {(run.where, u.id): (run, u) for run in runs for u in run.utterances}
    changed: set[str] = set()

    def origin(cid: str) -> tuple[str, str, str] | None:
        """Where a rated clip came from in these runs, while the run still has that very audio."""
        clip = clips[cid]
        hit = found.get((clip["run_folder"], clip["utterance_id"]))
        if hit is None:
            return None
        run, u = hit
        if store.sha256_or_none(run.audio(u.audio_path)) != clip["source_sha256"]:
            changed.add(cid)
            return None
        return clip["run_folder"], u.voice, u.condition

    kept = [v for v in votes if v.role == "test" and v.listener not in left_out]
    rated = kind.human(test.name, kept, origin, clips)
    notes = [f"listening test {test.name!r}: {len(changed)} rated clip(s) left out, their run's audio changed since "
             "the test was made"] if changed else []
    if rated is None:
        notes.append(f"listening test {test.name!r} rated none of these runs' audio")
    return rated, notes
