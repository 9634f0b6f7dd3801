"""The listening analysis against its references: the VoiceMOS Challenge's correlations as scipy and unilight/sheet's
calculate_metrics.py compute them, the krippendorff package's alpha, choix's Bradley-Terry; and simulated panels
with a known truth: the interval covers it about 95% of the time, and a listener who votes at random is left out."""
import numpy as np
import pytest
import scipy.stats
from scipy.stats import norm

from pipeline.listen import analysis
from pipeline.listen.analysis import Vote
from pipeline.listen.kinds import KINDS
from pipeline.measures.calibration import Calibration

MOS, CMOS = KINDS.get("mos"), KINDS.get("cmos")


def vote(listener, value, *, role="test", expected=None, sentence="s0", first="c0", second=None, played=True,
         raw=None, position=0):
    return Vote(listener, f"listener {listener}", f"t-{listener}-{role}-{sentence}-{first}", role,
                value if raw is None else raw, value, expected, sentence, first, second, played, position)


def clip(system: str, mean: float, measures: dict) -> analysis.ClipScore:
    return analysis.ClipScore(clip="c", system=system, run="r", voice="", sentence="s", utterance_id="u", votes=1,
                              mean=mean, measures=measures)


def test_the_correlations_are_the_voicemos_challenges_at_both_levels():
    rng = np.random.default_rng(0)
    systems = [f"sys{k}" for k in range(5)]
    clips = [clip(s, float(m), {"dnsmos_ovrl": float(m * 0.6 + 1 + rng.normal(0, 0.3))})
             for s, base in zip(systems, (2.0, 2.5, 3.1, 3.8, 4.2)) for m in base + rng.normal(0, 0.4, 12)]
    utterance, system = analysis.agreements(clips, "dnsmos_ovrl", n_boot=200, seed=1)
    true = np.array([c.mean for c in clips])
    pred = np.array([c.measures["dnsmos_ovrl"] for c in clips])
    # sheet's calculate(): np.mean of squares, np.corrcoef, scipy's spearmanr and kendalltau, at the utterance
    # level and on each system's means
    true_sys = np.array([true[[c.system == s for c in clips]].mean() for s in systems])
    pred_sys = np.array([pred[[c.system == s for c in clips]].mean() for s in systems])
    for got, (t, p) in ((utterance, (true, pred)), (system, (true_sys, pred_sys))):
        assert got.n == len(t)
        assert got.mse == pytest.approx(np.mean((t - p) ** 2), abs=1e-4)
        assert got.lcc == pytest.approx(scipy.stats.pearsonr(t, p)[0], abs=1e-4)
        assert got.srcc == pytest.approx(scipy.stats.spearmanr(t, p)[0], abs=1e-4)
        assert got.ktau == pytest.approx(scipy.stats.kendalltau(t, p)[0], abs=1e-4)
        for name in ("mse", "lcc", "srcc", "ktau"):
            low, high = getattr(got, f"{name}_ci95_low"), getattr(got, f"{name}_ci95_high")
            assert low <= getattr(got, name) <= high, name


def test_krippendorffs_alpha_is_the_packages():
    import krippendorff

    rng = np.random.default_rng(3)
    truth = rng.integers(1, 6, 40)
    matrix = np.full((7, 40), np.nan)  # raters × units, most units rated by some raters only
    for r in range(7):
        for u in range(40):
            if rng.random() < 0.6:
                matrix[r, u] = np.clip(truth[u] + rng.integers(-1, 2), 1, 5)
    units = [list(matrix[:, u][~np.isnan(matrix[:, u])]) for u in range(40)]
    ours = analysis.krippendorff_interval(units)
    assert ours == pytest.approx(krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval"),
                                 abs=1e-4)
    assert 0.5 < ours < 1


def test_bradley_terry_is_chois_maximum_likelihood():
    import choix

    rng = np.random.default_rng(5)
    strength = np.array([0.8, 0.0, -0.5, 0.3])
    wins = np.zeros((4, 4))
    comparisons = []
    for _ in range(400):
        i, j = rng.choice(4, 2, replace=False)
        winner, loser = (i, j) if rng.random() < 1 / (1 + np.exp(strength[j] - strength[i])) else (j, i)
        wins[winner, loser] += 1
        comparisons.append((winner, loser))
    ours = analysis.bradley_terry(wins, iterations=5000)
    theirs = choix.mm_pairwise(4, comparisons, alpha=0, tol=1e-12, max_iter=10000)
    np.testing.assert_allclose(ours, theirs - theirs.mean(), atol=1e-5)


def test_a_cmos_vote_reads_for_the_versions_as_created_whatever_order_they_were_heard_in():
    assert CMOS.oriented(2, swapped=False) == 2 and CMOS.oriented(2, swapped=True) == -2
    ab = KINDS.get("ab-np")
    assert [ab.oriented(v, swapped=True) for v in (1, 0, 2)] == [2, 0, 1]
    assert MOS.oriented(4, swapped=True) == 4


TRUE = {"A": 3.6, "B": 2.9}  # each system's mean rating before the scale's rounding and clipping
LISTENER_SD, SENTENCE_SD, NOISE_SD = 0.5, 0.4, 0.7


def expected_vote(mu: float) -> float:
    """What the population of listeners and sentences would give on average, on the 1-5 scale: the truth."""
    sd = np.sqrt(LISTENER_SD ** 2 + SENTENCE_SD ** 2 + NOISE_SD ** 2)
    edges = [-np.inf, 1.5, 2.5, 3.5, 4.5, np.inf]
    return sum(k * (norm.cdf(edges[k], mu, sd) - norm.cdf(edges[k - 1], mu, sd)) for k in range(1, 6))


def panel(rng, listeners=10, sentences=16, share=0.6):
    """Listeners with their own bias, sentences with their own difficulty, each listener rating a share of the
    clips with noise, on the rounded and clipped scale."""
    bias, difficulty = rng.normal(0, LISTENER_SD, listeners), rng.normal(0, SENTENCE_SD, sentences)
    votes, clips = [], {}
    for system, mu in TRUE.items():
        for i in range(sentences):
            clips[f"{system}{i}"] = {"system": system}
            for listener in range(listeners):
                if rng.random() < share:
                    x = int(np.clip(np.rint(mu + bias[listener] + difficulty[i] + rng.normal(0, NOISE_SD)), 1, 5))
                    votes.append(vote(listener, x, sentence=f"s{i}", first=f"{system}{i}"))
    return votes, clips


def test_the_mos_interval_covers_the_true_mos_about_95_percent_of_the_time():
    rng = np.random.default_rng(0)
    truth = {s: expected_vote(mu) for s, mu in TRUE.items()}
    panels, covered = 150, {s: 0 for s in TRUE}
    for k in range(panels):
        votes, clips = panel(rng)
        for score in analysis.system_scores(votes, clips, MOS, n_boot=1000, seed=k):
            covered[score.system] += score.ci95_low <= truth[score.system] <= score.ci95_high
    rates = [c / panels for c in covered.values()]
    # 300 intervals: a true 95% lands in [0.90, 0.99] with probability > 0.99
    assert all(0.90 <= r <= 0.99 for r in rates), rates


def session(rng, listener, answer):
    """One session as `listen create` makes it: 20 test trials, 2 gold (a clean clip, expected 4; heavy noise,
    expected 1), 2 traps asking for an answer."""
    own = [vote(listener, answer(None), sentence=f"s{i}", first=f"A{i}") for i in range(20)]
    own += [vote(listener, answer(4), role="gold", expected=4, sentence="g1"),
            vote(listener, answer(1), role="gold", expected=1, sentence="g2")]
    for n in range(2):
        asked = int(rng.integers(1, 6))
        given = answer(("trap", asked))
        own.append(vote(listener, given, role="trap", expected=asked, sentence=f"trap{n}", raw=given))
    return own


def careful(rng):
    """Hears what a trap asks; rates a clip by its quality, with their own noise."""
    def answer(asked):
        if isinstance(asked, tuple):
            return asked[1]
        return int(np.clip(np.rint(rng.normal(3.4 if asked is None else asked, 0.6)), 1, 5))
    return answer


def test_a_listener_who_votes_at_random_is_left_out_and_careful_ones_are_not():
    rng = np.random.default_rng(11)
    panels, random_kept, careful_left_out = 100, 0, 0
    for _ in range(panels):
        votes = [v for listener in range(8) for v in session(rng, listener, careful(rng))]
        votes += session(rng, 99, lambda asked: int(rng.integers(1, 6)))
        left_out = analysis.acceptance(votes, MOS)
        random_kept += 99 not in left_out
        careful_left_out += len(set(left_out) - {99})
    # a random listener passes two traps (1/25) and two golds (3/5 × 2/5): about once in a hundred
    assert random_kept <= 3, random_kept
    assert careful_left_out <= 0.05 * 8 * panels, careful_left_out
    unplayed = [vote(7, 4, first=f"A{i}", played=i != 3, position=i + 1) for i in range(12)]
    assert "1 trial(s) answered before every recording was played to its end (trial 4)" in \
        analysis.acceptance(unplayed, MOS)[7]
    trapped = [vote(9, 3, first=f"A{i}", position=i + 1) for i in range(6)] + \
        [vote(9, 2, role="trap", expected=5, raw=2, position=7)]
    assert "trial 7 answered 2 (Poor), asked for 5 (Excellent)" in analysis.acceptance(trapped, MOS)[9][0]
    flat = [vote(8, 3, first=f"A{i}") for i in range(12)]
    assert "hardly vary" in analysis.acceptance(flat, MOS)[8][0]


def test_a_calibration_is_the_least_squares_line_and_holds_only_over_its_range():
    rng = np.random.default_rng(2)
    x = rng.uniform(2.0, 3.5, 40)
    clips = [clip("A", float(1.5 * v - 1.0 + rng.normal(0, 0.2)), {"m": float(v)}) for v in x]
    fit = analysis.calibration(clips, "m", "panel", MOS, n_boot=300, seed=0)
    slope, intercept = np.polyfit(x, [c.mean for c in clips], 1)
    assert fit.slope == pytest.approx(slope, abs=1e-4) and fit.intercept == pytest.approx(intercept, abs=1e-4)
    assert fit.slope_ci95_low < 1.5 < fit.slope_ci95_high
    assert (fit.low, fit.high) == (x.min(), x.max())  # exactly: the clips at the ends get their value
    assert fit.apply(x.min()) is not None and fit.apply(x.max()) is not None
    assert fit.apply(3.0) == pytest.approx(intercept + slope * 3.0, abs=1e-3)
    steep = Calibration(**{**fit.as_json(), "intercept": 0.0, "slope": 2.0})
    assert steep.apply(x.max()) == 5.0 and "clipped to [1, 5]" in steep.meaning()  # 2 × 3.5 stays on the scale
    assert fit.apply(4.2) is None and fit.apply(None) is None
    assert Calibration(**fit.as_json()) == fit
    with pytest.raises(ValueError):
        Calibration(**{**fit.as_json(), "clips": 2})


def test_three_systems_get_bradley_terry_strengths_in_their_order_with_intervals():
    import choix

    rng = np.random.default_rng(8)
    strength = {"A": 0.9, "B": 0.1, "C": -0.8}
    ab = KINDS.get("ab")
    clips, votes, comparisons = {}, [], []
    names = sorted(strength)
    for i in range(12):
        for x, y in (("A", "B"), ("A", "C"), ("B", "C")):
            clips[f"{x}{i}"], clips[f"{y}{i}"] = {"system": x}, {"system": y}
            for listener in range(6):
                second_wins = rng.random() < 1 / (1 + np.exp(strength[x] - strength[y]))
                votes.append(vote(listener, 2 if second_wins else 1, sentence=f"s{i}", first=f"{x}{i}",
                                  second=f"{y}{i}"))
                winner, loser = (y, x) if second_wins else (x, y)
                comparisons.append((names.index(winner), names.index(loser)))
    found = {s.system: s for s in analysis.strengths(votes, clips, ab, n_boot=200, seed=0)}
    theirs = choix.mm_pairwise(3, comparisons, alpha=0, tol=1e-12, max_iter=10000)
    for k, name in enumerate(names):
        assert found[name].score == pytest.approx(theirs[k] - theirs.mean(), abs=1e-3)
        assert found[name].ci95_low < found[name].score < found[name].ci95_high
    assert found["A"].score > found["B"].score > found["C"].score
    assert found["C"].ci95_high < found["A"].ci95_low


def test_a_unanimous_panel_gets_an_honest_interval_and_votes_of_two_listeners_are_not_twenty():
    """Two listeners who both prefer A on ten sentences: the share is 0, but two listeners are not a population."""
    ab = KINDS.get("ab")
    clips = {**{f"A{i}": {"system": "A"} for i in range(10)}, **{f"B{i}": {"system": "B"} for i in range(10)}}
    votes = [vote(listener, 1, sentence=f"s{i}", first=f"A{i}", second=f"B{i}") for listener in (0, 1)
             for i in range(10)]
    (pair,) = analysis.pair_scores(votes, clips, ab, n_boot=300, seed=0)
    assert pair.preference == -1 and pair.mean == 0 and pair.share_b == 0 and pair.prefer_a == 20
    # Clopper-Pearson of 0 of 2: not a point, on either scale
    high = 1 - 0.025 ** 0.5
    assert pair.preference_ci95_low == -1 and pair.preference_ci95_high == pytest.approx(2 * high - 1, abs=1e-4)
    assert pair.ci95_low == 0 and pair.ci95_high == pytest.approx(high, abs=1e-4)
    assert pair.p == pytest.approx(2 / 2 ** 10, rel=1e-3)  # ten sentences, every one the same way: the exact floor


def test_the_mos_test_gives_each_pair_of_systems_a_difference_with_its_interval_and_exact_test():
    rng = np.random.default_rng(4)
    votes, clips = panel(rng, listeners=8, sentences=12)
    (diff,) = analysis.differences(votes, clips, n_boot=500, seed=0)
    assert (diff.a, diff.b, diff.sentences) == ("A", "B", 12)
    a = np.mean([v.value for v in votes if clips[v.first]["system"] == "A"])
    b = np.mean([v.value for v in votes if clips[v.first]["system"] == "B"])
    assert diff.delta == pytest.approx(b - a, abs=1e-4) and diff.ci95_low < diff.delta < diff.ci95_high
    per = [np.mean([v.value for v in votes if v.sentence == f"s{i}" and v.first == f"B{i}"]) -
           np.mean([v.value for v in votes if v.sentence == f"s{i}" and v.first == f"A{i}"]) for i in range(12)]
    assert diff.p == pytest.approx(every_sign_flip(per), rel=1e-3)


def every_sign_flip(differences) -> float:
    """The exact signed-rank p by brute force: every one of the 2ⁿ sign flips of the midranks, counted."""
    import itertools

    d = np.array([x for x in differences if abs(x) > 1e-9])
    ranks = scipy.stats.rankdata(np.abs(d))
    observed = ranks[d > 0].sum()
    centre = ranks.sum() / 2
    flips = np.array(list(itertools.product((0, 1), repeat=len(d))))
    sums = flips @ ranks
    return min(1.0, 2 * min(np.mean(sums <= observed + 1e-9), np.mean(sums >= observed - 1e-9))) \
        if observed != centre else 1.0


def test_the_sessions_a_test_needs_count_that_a_session_holds_a_trial_once():
    from pipeline.listen.create import sessions

    assert sessions(trials=40, votes=10, per_session=20) == 20
    assert sessions(trials=10, votes=10, per_session=20) == 10  # a CMOS of 10 sentences: not 5
    assert sessions(trials=25, votes=3, per_session=20) == 4
    assert sessions(trials=0, votes=10, per_session=20) == 0
