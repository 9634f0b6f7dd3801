"""What `listen results` writes and prints: the analysis (analysis.py) as results.json, one CSV per table, the
calibration.json that `assess.calibration` reads, and a terminal summary that answers the team's questions first:
each system's score with its CI, who was left out and why, whether each measure ranks the systems as the
listeners did, and each measure on the listeners' scale."""
from __future__ import annotations

from pathlib import Path

from pipeline.core import records, store
from pipeline.listen.analysis import (Agreement, Analysis, ClipScore, Difference, Excluded, PairScore, Strength,
                                      SystemScore)
from pipeline.listen.kinds import KINDS
from pipeline.measures import calibration


def write(found: Analysis, out: Path) -> list[str]:
    """The files, in `out`, each CSV through the one codec (core/records.py); their names."""
    out.mkdir(parents=True, exist_ok=True)
    store.write_json(out / "results.json", found.as_json())
    for name, rows, cls in (("systems", found.systems, SystemScore),
                            ("differences", found.differences, Difference), ("pairs", found.pairs, PairScore),
                            ("strengths", found.strengths, Strength), ("agreement", found.agreements, Agreement)):
        if rows:
            records.write_csv(out / f"{name}.csv", cls, rows)
    for name, rows in found.tables.items():
        if rows:
            records.write_csv(out / f"{name}.csv", type(rows[0]), rows)
    records.write_csv(out / "excluded.csv", Excluded, found.excluded)
    records.write_csv(out / "clips.csv", ClipScore, found.clips)
    calibration.write(out / "calibration.json", found.calibrations)
    return sorted(p.name for p in out.iterdir())


def ci_text(value, low, high) -> str:
    """A figure and its interval, as the terminal shows them: `0.123 [0.100, 0.150]`."""
    if value is None:
        return "-"
    return f"{value:.3f} [{low:.3f}, {high:.3f}]" if low is not None else f"{value:.3f}"


def text(found: Analysis) -> str:
    lines = [f"{found.test}: a {found.kind.upper()} test, {found.listeners} listener(s), {found.accepted} accepted, "
             f"{found.votes} test votes kept"]
    for e in found.excluded:
        lines.append(f"  left out: {e.listener} ({e.votes} votes): {'; '.join(e.reasons)}")
    if found.systems:
        lines.append(f"{'system':<24} {'votes':>5} {'clips':>5}  {found.kind.upper()} [95% CI]")
        lines += [f"{s.system:<24} {s.votes:>5} {s.clips:>5}  {ci_text(s.mean, s.ci95_low, s.ci95_high)}"
                  for s in found.systems]
    for d in found.differences:
        lines.append(f"{d.b} against {d.a}: Δ {found.kind.upper()} {ci_text(d.delta, d.ci95_low, d.ci95_high)} on "
                     f"{d.sentences} sentences, {d.test} p = {d.p}")
    kind = KINDS.get(found.kind)
    lines += kind.lines(found)
    for p in found.pairs:
        share = (f" ({ci_text(p.mean, p.ci95_low, p.ci95_high)} the share of the votes with a preference)"
                 if kind.shares and p.mean is not None else "")
        lines.append(f"{p.b} against {p.a}: {kind.preferred} "
                     f"{ci_text(p.preference, p.preference_ci95_low, p.preference_ci95_high)}{share}, {p.votes} votes, "
                     f"{p.test} p = {p.p}")
    if found.strengths:
        lines.append("Bradley-Terry: " + ", ".join(f"{s.system} {ci_text(s.score, s.ci95_low, s.ci95_high)}"
                                                   for s in found.strengths))
    if found.alpha is not None:
        lines.append(f"listeners' agreement: Krippendorff's alpha ({kind.agreement}) {found.alpha:.3f}")
    for a in found.agreements:
        if a.level == "system":
            lines.append(f"{a.measure} against the listeners, systems: SRCC {a.srcc}, KTAU {a.ktau} ({a.n} systems)")
    for a in found.agreements:
        if a.level == "utterance":
            lines.append(f"{a.measure} against the listeners, clips: LCC "
                         f"{ci_text(a.lcc, a.lcc_ci95_low, a.lcc_ci95_high)}, SRCC "
                         f"{ci_text(a.srcc, a.srcc_ci95_low, a.srcc_ci95_high)}, MSE {ci_text(a.mse, None, None)} "
                         f"({a.n} clips)")
    ranks = ranking(found)
    if ranks:
        lines.append(ranks)
    for c in found.calibrations:
        lines.append(f"{c.measure} on this panel's scale: {c.intercept:+.3f} + {c.slope:.3f} × {c.measure} "
                     f"(residual SD {c.residual_sd:.3f}), for {c.measure} in [{c.low}, {c.high}]")
    return "\n".join(lines)


def ranking(found: Analysis) -> str:
    """Whether each measure orders the systems as the listeners did (their means, by system)."""
    if len(found.systems) < 2:
        return ""
    human = {s.system: s.mean for s in found.systems}
    order = sorted(human, key=lambda s: -human[s])
    out = []
    for m in dict.fromkeys(a.measure for a in found.agreements):
        per = {}
        for c in found.clips:
            if c.measures.get(m) is not None:
                per.setdefault(c.system, []).append(c.measures[m])
        means = {s: sum(v) / len(v) for s, v in per.items()}
        if set(means) != set(order):
            continue
        theirs = sorted(means, key=lambda s: -means[s])
        out.append(f"{m} {'ranks the systems as the listeners did' if theirs == order else 'ranks them otherwise'}: "
                   + " > ".join(theirs))
    return ("listeners: " + " > ".join(order) + "\n" + "\n".join(out)) if out else ""
