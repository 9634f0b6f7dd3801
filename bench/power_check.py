"""The power figures of every paired comparison (pipeline/scoring/paired.py power) against simulation:

    python bench/power_check.py [--trials 20000]

For several numbers of sentences n and observed differences Δ (per-sentence differences of spread 1), it draws
`trials` comparisons of n sentences whose true difference is the detectable |Δ| the formula gives, and of the
sentences the formula says the observed Δ needs, and counts how often a two-sided paired t-test at α 0.05 finds
them significant: both shares should be 80%. Writes bench/out/power_check.md (docs/statistics.md quotes it)."""
from __future__ import annotations

import argparse
import sys

import numpy as np

from common import ROOT, write_report

sys.path.insert(0, str(ROOT))


def rejections(n: int, delta: float, trials: int, rng) -> float:
    from scipy.stats import ttest_1samp

    d = rng.normal(delta, 1.0, size=(trials, n))
    return float(np.mean(ttest_1samp(d, 0.0, axis=1).pvalue < 0.05))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trials", type=int, default=20000)
    args = p.parse_args()
    from pipeline.scoring import paired

    rng = np.random.default_rng(1337)
    lines = ["# Power figures against simulation", "",
             f"Paired t-test at α 0.05, per-sentence differences N(Δ, 1), {args.trials} simulated comparisons a cell.",
             "", "| sentences | Δ seen | detectable \\|Δ\\| | found at that Δ | sentences needed for Δ seen | found with them |",
             "|---|---|---|---|---|---|"]
    for n, seen in ((6, 0.8), (11, 0.3), (20, 0.3), (50, 0.2), (200, 0.1)):
        sample = rng.normal(size=n)
        contributions = list((sample - sample.mean()) / sample.std(ddof=1) + seen)
        power = paired.power(contributions, seen)
        at = rejections(n, power.detectable, args.trials, rng)
        needed = rejections(power.needed, seen, args.trials, rng)
        lines.append(f"| {n} | {seen:g} | {power.detectable:.3f} | {at:.1%} | {power.needed} | {needed:.1%} |")
    write_report("power_check", lines)


if __name__ == "__main__":
    main()
