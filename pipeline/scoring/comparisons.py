"""Every two groups (voice × engine × condition) that share sentences, compared on those sentences: ΔWER with a
paired bootstrap interval, ΔCER, MAPSSWE, sign and Wilcoxon tests (scoring/paired.py), Holm-corrected over all
the pairs that answer one question, and a one-line verdict.

The correction family is the pairs that differ in one factor only (two voices under the same engine and condition,
two engines on the same voice and condition, two conditions of the same voice and engine): those are the questions
users ask. Pairs that differ in two or three factors stay in comparisons.csv, marked `cross-factor` and corrected
among themselves, so that they neither dilute nor borrow from the one-factor family."""
from __future__ import annotations

from itertools import combinations

from pipeline.core.records import Comparison, Group, ScoredUtterance
from pipeline.io.conditions import SILENCE
from pipeline.scoring import paired
from pipeline.scoring.evaluate import Results

ALPHA = 0.05


FACTORS = ("voice", "asr", "condition")
ONE_FACTOR, CROSS_FACTOR = "one-factor", "cross-factor"


def differs(a: Group, b: Group) -> str:
    """The factors in which two groups differ: 'voice', 'asr+condition', …"""
    return "+".join(name for name, x, y in zip(FACTORS, a, b) if x != y)


def family(a: Group, b: Group) -> str:
    return ONE_FACTOR if "+" not in differs(a, b) else CROSS_FACTOR


def correct(rows: list[dict]) -> None:
    """Each pair's family, and its p-values Holm-corrected within that family (`<test>_p_holm`)."""
    for row in rows:
        row.update(differs=differs(row["a"], row["b"]), holm_family=family(row["a"], row["b"]))
    for test in ("mapsswe", "sign", "wilcoxon"):
        for name in (ONE_FACTOR, CROSS_FACTOR):
            members = [r for r in rows if r["holm_family"] == name]
            for row, p in zip(members, paired.holm([r[f"{test}_p"] for r in members])):
                row[f"{test}_p_holm"] = p


def label(group: Group) -> str:
    return " | ".join(part or "-" for part in group)


def short(a: Group, b: Group) -> tuple[str, str]:
    """The parts that tell two groups apart: 'flite:slt' vs 'piper:joe' when only the voice differs."""
    keep = [i for i in range(3) if a[i] != b[i]]
    return " ".join(a[i] or "-" for i in keep), " ".join(b[i] or "-" for i in keep)


def _rate(errors: int, words: int) -> float | None:
    return errors / words if words else None


def rounded(x: float | None, digits: int = 4) -> float | None:
    """A figure as the tables keep it (numpy's scalars as Python floats)."""
    return None if x is None else round(float(x), digits)


def undetected(sentences: int, delta: float | None, power: paired.Power, digits: int = 3) -> str:
    """What a comparison that found no difference could have found (paired.power), in words; "" when nothing can
    be said."""
    if power.detectable is None:
        return ""
    note = f"; {sentences} sentences detect |Δ| ≥ {power.detectable:.{digits}f} ({paired.POWER:.0%} power, α {ALPHA})"
    return note + (f", Δ = {delta:+.{digits}f} would take about {power.needed}" if power.needed and delta else "")


def verdict(a: Group, b: Group, delta: float | None, low: float | None, high: float | None, p: float,
            power_note: str = "") -> str:
    name_a, name_b = short(a, b)
    shared = ", ".join(a[i] for i in range(3) if a[i] == b[i] and a[i])
    context = f"{shared}: " if shared else ""
    if delta is None:
        return f"{context}{name_a} and {name_b} share no scored words"
    interval = f" [{low:+.3f}, {high:+.3f}]" if low is not None else ""
    figures = f"Δ = {delta:+.3f}{interval}, p = {p:.3g}"
    if p < ALPHA and delta != 0:
        return f"{context}{name_b} has {'more' if delta > 0 else 'fewer'} errors than {name_a}, {figures}"
    return f"{context}no significant difference between {name_a} and {name_b}, {figures}{power_note}"


def compare(scores: Results, n_boot: int = 1000, seed: int = 1337) -> list[Comparison]:
    groups: dict[Group, dict[str, ScoredUtterance]] = {}
    for u in scores.utterances:
        if u.status == "ok" and u.condition != SILENCE:
            groups.setdefault(u.group, {})[u.sentence_id] = u
    rows = []
    for a, b in combinations(groups, 2):
        shared = [s for s in groups[a] if s in groups[b]]
        if not shared:
            continue
        ua, ub = [groups[a][s] for s in shared], [groups[b][s] for s in shared]
        words = [u.ref_words for u in ua]
        ea, eb = [u.errors for u in ua], [u.errors for u in ub]
        delta, low, high = paired.paired_bootstrap(ea, eb, words, n_boot, seed)
        m = paired.mapsswe([(scores.alignment(x).ops, scores.alignment(y).ops) for x, y in zip(ua, ub)])
        pa, pb = [100 * u.wer for u in ua], [100 * u.wer for u in ub]
        s, w = paired.sign_test(pb, pa), paired.wilcoxon(pb, pa)
        chars = sum(u.ref_chars or 0 for u in ua)
        cer_a, cer_b = _rate(sum(u.char_errors or 0 for u in ua), chars), _rate(sum(u.char_errors or 0 for u in ub), chars)
        delta_cer = cer_b - cer_a if cer_a is not None and cer_b is not None else None
        power = paired.power(paired.pooled_contributions(ea, eb, words), delta, ALPHA)
        rows.append(dict(a=a, b=b, sentences=len(shared), wer_a=rounded(_rate(sum(ea), sum(words))),
                         wer_b=rounded(_rate(sum(eb), sum(words))), delta_wer=rounded(delta),
                         delta_ci95_low=rounded(low), delta_ci95_high=rounded(high), cer_a=rounded(cer_a),
                         cer_b=rounded(cer_b), delta_cer=rounded(delta_cer), mapsswe_segments=m.segments,
                         mapsswe_z=rounded(m.z, 3), mapsswe_p=m.p, sign_b_worse=s.positive, sign_b_better=s.negative,
                         sign_ties=s.ties, sign_p=s.p, wilcoxon_z=rounded(w.z, 3), wilcoxon_p=w.p,
                         detectable_delta=rounded(power.detectable), sentences_needed=power.needed, power=power))
    correct(rows)
    out = []
    for r in rows:
        r["verdict"] = verdict(r["a"], r["b"], r["delta_wer"], r["delta_ci95_low"], r["delta_ci95_high"],
                               r["mapsswe_p_holm"], undetected(r["sentences"], r["delta_wer"], r.pop("power")))
        for key in ("mapsswe_p", "mapsswe_p_holm", "sign_p", "sign_p_holm", "wilcoxon_p", "wilcoxon_p_holm"):
            r[key] = float(f"{r[key]:.4g}")
        out.append(Comparison(**{**r, "a": label(r["a"]), "b": label(r["b"])}))
    return out


def most_confident(comparisons: list[Comparison], k: int = 3) -> list[Comparison]:
    """The k pairs with the smallest corrected MAPSSWE p-values, the largest |Δ| first among equals; pairs that
    differ in one factor only (two voices under the same engine and condition) come first, as they answer a
    question."""
    def factors(c: Comparison) -> int:
        return sum(x != y for x, y in zip(c.a.split(" | "), c.b.split(" | ")))

    return sorted(comparisons, key=lambda c: (factors(c) > 1, c.mapsswe_p_holm, -abs(c.delta_wer or 0)))[:k]
