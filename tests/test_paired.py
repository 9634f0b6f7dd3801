"""Paired comparisons: NIST sc_stats on the same trn files gives the same MAPSSWE, sign and Wilcoxon figures, and
the figures are right where the answer is known by construction."""
import random
import re
import shutil
import subprocess
import sys

import pytest

from pipeline.scoring import sclite
from pipeline.scoring.align import align, align_codes
from pipeline.scoring.paired import holm, mapsswe, sign_test, wilcoxon
from tests.helpers import ROOT

SCTK = "/usr/lib/sctk/bin"
VOCAB = "a b c d e the king lord my sister phone".split()


def noisy(rng, ref, p):
    out = []
    for w in ref:
        x = rng.random()
        if x < p:
            out.append(rng.choice(VOCAB))
        elif x >= p * 1.3:
            out.append(w)
        if rng.random() < p / 3:
            out.append(rng.choice(VOCAB))
    return out


PRIMES = [5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71]


def systems(seed, n=40, lengths=None):
    rng = random.Random(seed)
    refs = [[rng.choice(VOCAB) for _ in range(k)] for k in (lengths or [rng.randint(1, 14) for _ in range(n)])]
    a = [noisy(rng, r, rng.choice([0.0, 0.05, 0.1, 0.2])) for r in refs]
    b = [noisy(rng, r, rng.choice([0.05, 0.15, 0.3])) for r in refs]
    return refs, a, b


def percent(ops):
    words = sum(1 for op, _, _ in ops if op != "I")
    return 100 * sum(1 for op, _, _ in ops if op != "H") / words


def sc_stats(tmp_path, refs, a, b) -> dict[str, str]:
    def trn(rows, name):  # one speaker per sentence: sc_stats' sign and Wilcoxon tests are per speaker
        (tmp_path / name).write_text(sclite.write_trn([(f"s{i:03d}_u{i:03d}", " ".join(w))
                                                       for i, w in enumerate(rows)]))
    trn(refs, "ref.trn"), trn(a, "A.trn"), trn(b, "B.trn")
    for name in ("A", "B"):
        subprocess.run([f"{SCTK}/sclite", "-r", "ref.trn", "trn", "-h", f"{name}.trn", "trn", "-i", "spu_id",
                        "-o", "sgml", "-n", name], cwd=tmp_path, check=True, capture_output=True)
    subprocess.run(f"cat A.sgml B.sgml | {SCTK}/sc_stats -p -t mapsswe sign wilc -v -n out", shell=True,
                   cwd=tmp_path, check=True, capture_output=True)
    return {t: (tmp_path / f"out.stats.{t}").read_text() for t in ("mapsswe", "sign", "wilc")}


@pytest.mark.skipif(not shutil.os.path.exists(f"{SCTK}/sc_stats"), reason="needs Debian sctk")
@pytest.mark.parametrize("seed", range(5))
def test_mapsswe_sign_and_wilcoxon_agree_with_nist_sc_stats(tmp_path, seed):
    refs, a, b = systems(seed)
    ops_a = [align(r, h).ops for r, h in zip(refs, a)]
    ops_b = [align(r, h).ops for r, h in zip(refs, b)]
    out = sc_stats(tmp_path, refs, a, b)

    m = re.search(r"# segs: (\d+)\).*\(mean: ([-\d.]+)\) \(std dev: ([-\d.]+)\) \(Z Stat: ([-\d.]+)\)", out["mapsswe"])
    ours = mapsswe(list(zip(align_codes(refs, a), align_codes(refs, b))))
    assert ours.segments == int(m.group(1))
    assert (round(ours.mean, 3), round(ours.sd, 3), round(ours.z, 3)) == tuple(float(x) for x in m.groups()[1:])

    wa, wb = [percent(o) for o in ops_a], [percent(o) for o in ops_b]
    first = re.search(r"Percentages for Systems (\w)\.trn", out["sign"]).group(1)  # sc_stats: first − second
    s = sign_test(wb, wa) if first == "B" else sign_test(wa, wb)
    counts = [int(x) for x in re.findall(r"= N\([+\-0]\) = +(\d+)", out["sign"])]
    assert [s.positive, s.negative, s.ties] == counts


@pytest.mark.skipif(not shutil.os.path.exists(f"{SCTK}/sc_stats"), reason="needs Debian sctk")
@pytest.mark.parametrize("seed", range(4))
def test_wilcoxon_agrees_with_nist_sc_stats(tmp_path, seed):
    """Sentences of distinct prime lengths, where the two systems' WER (%) differ: two differences can then never
    tie. (Ties sc_stats ranks by their floating-point values, so 33.33 from 5/12 − 1/12 is not 33.33 from 1/3;
    and it hands zero differences' ranks alternately to + and −, which this module does not: see its docstring.)"""
    refs, a, b = systems(seed, lengths=PRIMES)
    kept = [i for i in range(len(refs)) if percent(align(refs[i], a[i]).ops) != percent(align(refs[i], b[i]).ops)]
    refs, a, b = ([x[i] for i in kept] for x in (refs, a, b))
    wa = [percent(align(r, h).ops) for r, h in zip(refs, a)]
    wb = [percent(align(r, h).ops) for r, h in zip(refs, b)]
    out = sc_stats(tmp_path, refs, a, b)
    first = re.search(r"Percentages for Systems (\w)\.trn", out["wilc"]).group(1)  # sc_stats: first − second
    w = wilcoxon(wb, wa) if first == "B" else wilcoxon(wa, wb)
    sums = {sign: float(x) for sign, x in re.findall(r"Sum of +\d+ (\w+) ranks = ([\d.]+)", out["wilc"])}
    assert w.zero_ranks == 0 and (w.w_plus, w.w_minus) == (sums["positive"], sums["negative"])
    assert round(w.z, 2) == float(re.search(r"Z statistic = ([-\d.]+)", out["wilc"]).group(1))


def test_holm():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5]) == [0.5]


def test_the_sign_tests_binomial_tail_is_the_sum_of_binomial_coefficients_at_any_size():
    """Exact at every size, and fast at a large corpus's: 30,000 sentences took 48 s before."""
    import math

    from scipy.stats import binomtest

    from pipeline.scoring.paired import binomial_tail

    for n, k in ((0, 0), (1, 0), (1, 1), (12, 2), (20, 5), (301, 140), (2000, 999)):
        assert binomial_tail(n, k) == sum(math.comb(n, i) for i in range(k + 1)), (n, k)
    for worse, better in ((9, 0), (30, 12), (14000, 16000)):
        assert sign_test([1.0] * worse + [0.0] * better, [0.0] * worse + [1.0] * better).p == pytest.approx(
            binomtest(min(worse, better), worse + better).pvalue, rel=1e-9)


def test_the_exact_signed_rank_test_is_scipys_exact_test_and_its_floor_is_two_over_two_to_the_n():
    from scipy.stats import wilcoxon as scipy_wilcoxon

    from pipeline.scoring.paired import signed_rank, smallest_p

    rng = random.Random(3)
    for n in (5, 8, 10, 15, 25):
        d = [rng.uniform(-1, 1.5) for _ in range(n)]  # no ties, no zeros: scipy's exact distribution holds
        ours = signed_rank(d)
        assert ours.exact and ours.p == pytest.approx(scipy_wilcoxon(d, method="exact").pvalue, rel=1e-9)
    assert signed_rank([0.3] * 10).p == pytest.approx(smallest_p(10)) == pytest.approx(2 / 1024)
    assert signed_rank([0.0, 0.0]).p == 1.0 and signed_rank([]).p == 1.0


def test_the_p_values_are_scipy_stats_own_to_the_bit_without_importing_it():
    """Every run compares, and importing scipy.stats costs each run about half a second: paired.py calls the
    special functions and ranks scipy.stats calls (t.sf is stdtr(df, −x), t.ppf stdtrit(df, q), norm.sf
    ndtr(−x)), so every figure must be the same double as through scipy.stats."""
    code = ("import sys, random; from pipeline.scoring import paired; from pipeline.scoring.align import align_codes; "
            "r = random.Random(1); refs = [[r.choice('abcde') for _ in range(9)] for _ in range(30)]; "
            "hyps = [[w if r.random() > 0.3 else 'x' for w in ref] for ref in refs]; "
            "paired.mapsswe([(align_codes([a], [b])[0], align_codes([a], [a])[0]) for a, b in zip(refs, hyps)]); "
            "paired.wilcoxon([1.0, 2.0, 2.0, 0.0], [0.0, 1.0, 3.0, 0.0]); "
            "paired.signed_rank([r.uniform(-1, 1) for _ in range(500)]); paired.power([0.1, 0.3, -0.2], 0.1); "
            "sys.exit('scipy.stats' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 0
    import numpy as np
    from scipy.special import ndtr, stdtr, stdtrit
    from scipy.stats import norm, rankdata, t

    from pipeline.scoring.rates import ranks

    rng = np.random.default_rng(0)
    for df in (1, 2, 3, 7, 19, 120, 4000):
        for x in (*rng.normal(0, 3, 50), 0.0, 1e-12, 40.0):
            assert stdtr(df, -abs(x)) == t.sf(abs(x), df)
        for q in (0.5, 0.8, 0.975, *rng.uniform(0, 1, 20)):
            assert stdtrit(df, q) == t.ppf(q, df)
    for x in (*rng.normal(0, 4, 200), 0.0, 38.0):
        assert ndtr(-abs(x)) == norm.sf(abs(x))
    for _ in range(200):
        values = rng.integers(0, rng.integers(1, 30), rng.integers(1, 60)).astype(float) / 4  # many ties
        assert np.array_equal(ranks(values), rankdata(values))


@pytest.mark.parametrize("length", [2, 37, 1500, 140_000])  # one block of resamples, several, one resample a block
def test_the_paired_bootstrap_held_a_block_at_a_time_is_the_bootstrap_of_one_draw(length):
    """Its interval is that of numpy's one (n_boot, n) draw and its gathers, to the bit, for counts and for a
    measure's values alike; it holds a block of resamples, where the one draw held 2.4 GB for 100,000 sentences."""
    import numpy as np

    from pipeline.scoring.paired import paired_bootstrap

    def one_draw(a, b, n, n_boot, seed):
        a, b, n = (np.asarray(x, dtype=float) for x in (a, b, n))
        idx = np.random.default_rng(seed).integers(0, len(n), size=(n_boot, len(n)))
        sums = n[idx].sum(axis=1)
        deltas = (b[idx].sum(axis=1) - a[idx].sum(axis=1)) / np.where(sums == 0, np.nan, sums)
        return float((b.sum() - a.sum()) / n.sum()), *(float(x) for x in np.nanpercentile(deltas, [2.5, 97.5]))

    rng = np.random.default_rng(length)
    n_boot = 1000 if length < 100_000 else 20
    counts = [list(rng.integers(0, 9, length)), list(rng.integers(0, 9, length)), list(rng.integers(0, 20, length))]
    values = [list(rng.normal(3, 1, length)), list(rng.normal(3.1, 1, length)), [1] * length]
    for a, b, n in (counts, values):
        assert paired_bootstrap(a, b, n, n_boot, 7) == one_draw(a, b, n, n_boot, 7)


def test_mapsswe_reads_each_reference_word_and_the_insertions_before_it_off_the_op_codes():
    """MAPSSWE's marks come from an alignment's op codes (a comparison reads them back from errors.csv without the
    words); they must be what the alignment's words say, sclite -D's optional words over nothing included."""
    from pipeline.scoring.align import HYP_ONLY, REF_ONLY, Op, from_codes
    from pipeline.scoring.paired import marks

    rng = random.Random(11)
    for _ in range(3000):
        codes = bytes(rng.choice((0, 0, 0, 1, 2, 3, 4, 5)) for _ in range(rng.randint(0, 12)))
        ref = [f"r{i}" for i in range(sum(c not in HYP_ONLY for c in codes))]
        hyp = [f"h{j}" for j in range(sum(c not in REF_ONLY for c in codes))]
        correct, inserted = [], [0]
        for op, r, _ in from_codes(ref, hyp, codes).ops:
            if r is not None:  # a reference word: recognized, or not; the insertions after it count before the next
                correct.append(op == Op.HIT)
                inserted.append(0)
            elif op == Op.INSERTION:  # an optional word over nothing is not an insertion
                inserted[-1] += 1
        assert marks(codes) == (correct, inserted), codes


def test_a_sentence_the_two_systems_heard_said_in_different_ways_is_one_segment():
    """A trn reference's alternation (`{ the / a b }`) can be resolved one way for A and another for B: its words
    then do not pair, and the sentence is one MAPSSWE segment of each system's errors, whichever system comes first."""
    from pipeline.scoring import alternations, normalize
    from pipeline.scoring.paired import marks, segments

    normalizer = normalize.for_language("sclite", "en")
    codes = [alternations.resolve("x { the / a b } y z w", hyp, normalizer).codes
             for hyp in ("x the y z w", "x a b q z w")]
    a, b = marks(codes[0]), marks(codes[1])
    assert len(a[0]) == 5 and len(b[0]) == 6
    assert segments(a, b) == [(0, 1)] and segments(b, a) == [(1, 0)]
    assert mapsswe([(codes[0], codes[1])] * 3).segments == 3
