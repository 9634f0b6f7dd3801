"""The statistics of the compare stage, each on data where the answer is known by construction."""
import random

import pytest

from pipeline.scoring.utterances import Pair
from pipeline.statistics import agreement, blame, difficulty, robustness, sensitivity
from pipeline.statistics import words as failing
from pipeline.statistics.comparisons import (compare, corrected, differs, family, most_confident, rounded,
                                              significant_digits)
from pipeline.scoring.config import ScoreConfig
from pipeline.scoring.evaluate import evaluate

WORDS = "now is the winter of our discontent made glorious summer".split()  # 10 words


def row(sentence, voice, asr, condition, reference, hypothesis, perplexity=None):
    return Pair(sentence_id=sentence, voice=voice, asr=asr, condition=condition, reference=reference,
                hypothesis=hypothesis, perplexity=perplexity)


def sentences(n=12):
    return [(f"s{i:02d}", " ".join(WORDS[i % 3:] + WORDS[:i % 3])) for i in range(n)]


def with_errors(text, k):
    """k substitutions, at the start of the sentence."""
    words = text.split()
    return " ".join(["zz"] * k + words[k:])


def test_two_identical_systems_differ_by_nothing():
    rows = [row(s, v, "asr:x", "clean", text, with_errors(text, i % 3)) for v in ("a:1", "b:2")
            for i, (s, text) in enumerate(sentences())]
    r = evaluate(rows, ScoreConfig(bootstrap=200))
    (c,) = compare(r, 200)
    assert (c.delta_wer, c.delta_ci95_low, c.delta_ci95_high, c.delta_cer) == (0.0, 0.0, 0.0, 0.0)
    assert c.mapsswe_p == c.sign_p == c.wilcoxon_p == c.mapsswe_p_holm == 1.0
    assert c.verdict.startswith("asr:x, clean: no significant difference between a:1 and b:2")


def test_one_extra_error_per_sentence_is_a_known_delta():
    rows = []
    for i, (s, text) in enumerate(sentences()):
        rows.append(row(s, "a:1", "asr:x", "clean", text, with_errors(text, i % 2)))
        rows.append(row(s, "b:2", "asr:x", "clean", text, with_errors(text, i % 2 + 1)))
    r = evaluate(rows, ScoreConfig(bootstrap=200))
    (c,) = compare(r, 500)
    assert c.delta_wer == pytest.approx(12 / 120) and c.sentences == 12
    assert c.delta_ci95_low == c.delta_ci95_high == pytest.approx(0.1)  # every sentence moves by the same 0.1
    assert c.mapsswe_segments == 12 and c.mapsswe_z is None  # every segment differs alike: the exact sign test
    assert (c.sign_b_worse, c.sign_b_better, c.sign_ties) == (12, 0, 0)
    assert c.mapsswe_p < 0.001 and c.sign_p < 0.001 and c.wilcoxon_p < 0.01
    assert c.verdict.startswith("asr:x, clean: b:2 has more errors than a:1, Δ = +0.100")
    assert c.delta_cer > 0


def test_each_pairs_mapsswe_is_that_of_its_sentences_whole_alignments_though_each_is_marked_once():
    """Three systems: every utterance is in two pairs, and its MAPSSWE marks are made once for both."""
    from pipeline.scoring import paired

    rng = random.Random(3)
    said = {v: [" ".join(w if rng.random() > 0.25 else rng.choice(WORDS + ["zz"]) for w in text.split()
                         if rng.random() > 0.1) for _, text in sentences()] for v in ("a:1", "b:2", "c:3")}
    r = evaluate([row(s, v, "asr:x", "clean", text, said[v][i]) for v in said for i, (s, text) in
                  enumerate(sentences())], ScoreConfig(bootstrap=50))
    found = compare(r, 50)
    by = {(u.voice, u.sentence_id): u for u in r.utterances}
    assert len(found) == 3
    for c in found:
        whole = paired.mapsswe([(r.codes(by[c.a[0], s]), r.codes(by[c.b[0], s]))
                                for s, _ in sentences()])
        assert (c.mapsswe_segments, c.mapsswe_z, c.mapsswe_p) == (whole.segments, rounded(whole.z, 3),
                                                                  significant_digits(whole.p))
        assert whole.segments > 3 and whole.z is not None


def test_holm_corrects_over_the_one_factor_pairs_alone():
    g = lambda voice, asr="asr:x", condition="clean": (voice, asr, condition)  # noqa: E731
    pairs, p = zip(*[((a, b), p) for a, b, p in (
        (g("a:1"), g("b:2"), 0.01),                      # voices, same engine and condition
        (g("a:1"), g("a:1", "asr:y"), 0.04),             # engines
        (g("a:1"), g("a:1", condition="noise:snr=5"), 0.03),  # conditions
        (g("b:2"), g("a:1", "asr:y"), 0.001),            # voice and engine: outside the family
        (g("b:2"), g("a:1", "asr:y", "noise:snr=5"), 0.02),
    )])
    holm = corrected(list(pairs), list(p))
    assert [differs(a, b) for a, b in pairs] == ["voice", "asr", "condition", "voice+asr", "voice+asr+condition"]
    assert [family(a, b) for a, b in pairs] == ["one-factor"] * 3 + ["cross-factor"] * 2
    # by hand, over the three one-factor p-values 0.01 < 0.03 < 0.04: 3 × 0.01, 2 × 0.03, max(0.06, 1 × 0.04)
    assert holm[:3] == pytest.approx([0.03, 0.06, 0.06])
    # and the cross-factor pairs among themselves: 2 × 0.001, max(0.002, 1 × 0.02)
    assert holm[3:] == pytest.approx([0.002, 0.02])


def test_holm_corrects_over_every_pair_and_the_summary_prefers_one_factor_pairs():
    rows = []
    for i, (s, text) in enumerate(sentences()):
        for v, k in (("a:1", 0), ("b:2", 1), ("c:3", 2)):
            rows.append(row(s, v, "asr:x", "clean", text, with_errors(text, (i % 2) * k)))
        rows.append(row(s, "a:1", "asr:y", "noise:snr=5", text, with_errors(text, 3)))
    r = evaluate(rows, ScoreConfig(bootstrap=0))
    pairs = compare(r, 0)
    assert len(pairs) == 6 and sum(c.holm_family == "one-factor" for c in pairs) == 3
    for c in pairs:
        assert c.mapsswe_p_holm >= c.mapsswe_p and c.sign_p_holm >= c.sign_p
    assert all(c.b[2] == "clean" for c in most_confident(pairs))  # the one-factor pairs first


def test_cer_counts_characters():
    r = evaluate([row("s", "", "", "clean", "the king", "the kin")], ScoreConfig(bootstrap=0))
    u = r.utterances[0]
    assert (u.ref_chars, u.char_errors, u.cer) == (8, 1, 0.125)
    assert r.summary[0].micro_cer == 0.125
    silent = evaluate([row("s", "", "", "silence", "the king", "you")], ScoreConfig(bootstrap=0)).utterances[0]
    assert (silent.ref_chars, silent.char_errors, silent.cer) == (0, 3, None)  # insertions counted, no rate
    empty = evaluate([row("e", "", "", "clean", "...", "abd")], ScoreConfig(bootstrap=0)).utterances[0]
    assert empty.status == "empty_reference" and (empty.ref_chars, empty.char_errors, empty.cer) == (0, 3, None)
    import jiwer

    assert jiwer.process_characters("", "x").insertions == 1  # jiwer counts an empty reference's insertions too


def test_character_errors_are_jiwers_edit_distance():
    import jiwer

    from pipeline.scoring.evaluate import char_errors

    rng = random.Random(3)
    for _ in range(500):  # normalized text, as scoring gives it: words and single spaces
        a, b = (" ".join("".join(rng.choice("abc'") for _ in range(rng.randint(1, 4)))
                         for _ in range(rng.randint(1, 5))) for _ in range(2))
        out = jiwer.process_characters(a, b)
        assert char_errors(a, b) == out.substitutions + out.deletions + out.insertions, (a, b)


def test_spearman_equals_scipys_with_ties():
    from scipy.stats import spearmanr

    from pipeline.scoring.rates import spearman

    rng = random.Random(4)
    for _ in range(200):
        n = rng.randint(3, 50)
        x = [float(rng.randint(0, 4)) for _ in range(n)]
        y = [rng.choice([rng.random(), 0.0, 0.5]) for _ in range(n)]
        ours = spearman(x, y)
        if ours.rho is None:
            assert len(set(x)) < 2 or len(set(y)) < 2
            continue
        theirs = spearmanr(x, y)
        assert ours.rho == pytest.approx(theirs.statistic, abs=1e-12)
        assert ours.p == pytest.approx(theirs.pvalue, rel=1e-9, abs=1e-15)


def test_the_bootstrap_interval_does_not_depend_on_its_block_size(monkeypatch):
    from pipeline.scoring import rates

    rng = random.Random(5)
    errors = [rng.randint(0, 4) for _ in range(300)]
    words = [rng.randint(4, 12) for _ in range(300)]
    whole = rates.corpus_wer(errors, words, 500, 7)
    monkeypatch.setattr(rates, "BOOTSTRAP_BLOCK", 1000)  # three resamples a block
    assert rates.corpus_wer(errors, words, 500, 7) == whole
    chars = [3 * e for e in errors]
    both = rates.corpus_rates([(errors, words), (chars, [5 * w for w in words])], 500, 7)
    assert both[0] == whole and both[1] == rates.corpus_wer(chars, [5 * w for w in words], 500, 7)


def test_normalizer_share_is_the_errors_normalization_removes():
    rows = [row("a", "v:1", "e:1", "clean", "The King, my lord!", "the king my lord"),
            row("b", "v:1", "e:1", "clean", "I'd go.", "i would go")]
    r = evaluate(rows, ScoreConfig(normalize="basic", bootstrap=0))
    (e,) = sensitivity.effects(r.utterances, "basic")
    # none: 3 + 3 errors of 6 words (case and punctuation; I'd → i would); sclite: 2 + 3 (case folded, the
    # punctuation kept: "king," and "lord!"); basic: 0 + 2; whisper: 0 + 0;
    # seed-tts-eval: 0 + 2 (its "i'd go" against "i would go": a substitution and an insertion); cv3-eval, in
    # English its very steps: the same
    assert e.wer == {"wer_none": 1.0, "wer_sclite": round(5 / 6, 4), "wer_basic": round(2 / 6, 4), "wer_whisper": 0.0,
                     "wer_seed-tts-eval": round(2 / 6, 4), "wer_cv3-eval": round(2 / 6, 4), "wer_kaldi": 1.0}
    assert e.normalization_share == round(4 / 6, 4) and e.used == "basic"


def test_difficulty_bins_by_perplexity_quartile_and_length():
    rows = []
    for i, (s, text) in enumerate(sentences(8)):
        hyp = with_errors(text, 5) if i >= 6 else text  # the two least likely sentences fail half their words
        rows.append(row(s, "v:1", "e:1", "clean", text, hyp, perplexity=float(i + 1)))
    r = evaluate(rows, ScoreConfig(bootstrap=100))
    bins = difficulty.bins(r.utterances, 100)
    quartiles = [b for b in bins if b.by == "perplexity"]
    assert [b.n_utterances for b in quartiles] == [2, 2, 2, 2]
    assert [b.micro_wer for b in quartiles] == [0.0, 0.0, 0.0, 0.5]
    assert quartiles[0].bin.startswith("Q1 (1-")
    (words,) = [b for b in bins if b.by == "words"]
    assert words.bin == "6-10" and words.micro_wer == 0.125


def test_a_word_failing_in_every_voice_points_at_the_text_one_voice_at_the_voice():
    rows = [row("s1", "a:1", "e:1", "clean", "the king rides", "the thing rides"),
            row("s1", "b:2", "e:1", "clean", "the king rides", "the thing rides"),
            row("s2", "a:1", "e:1", "clean", "a queen waits", "a queen waits"),
            row("s2", "b:2", "e:1", "clean", "a queen waits", "a green waits")]
    r = evaluate(rows, ScoreConfig(bootstrap=0))
    words = {w.word: w for w in failing.words(r)}
    assert set(words) == {"king", "queen"}
    assert words["king"].points_at == "one ASR family: text or ASR" and words["king"].failure_rate == 1.0
    assert words["queen"].points_at == "voice b:2" and words["queen"].failure_rate == 0.5
    assert list(words) == ["king", "queen"]  # hardest first
    assert words["queen"].utterances == r.utterances[3].id


def test_two_model_families_tell_the_text_the_voice_and_the_asr_apart():
    family = {"fw:base": "whisper", "ow:base": "whisper", "ps:en": "sphinx"}.get
    ref = "the king rides to the queen at dawn with joy"
    hyps = {  # (voice, engine): what it wrote
        ("a:1", "fw:base"): "the thing rides to the queen at don with joy",
        ("a:1", "ow:base"): "the thing rides to the queen at don with joy",
        ("a:1", "ps:en"): "the thing rides to the green at dawn with toy",
        ("b:2", "fw:base"): "the thing rides to the queen at dawn with joy",
        ("b:2", "ps:en"): "the thing rides to a queen at dawn with joy",
    }
    r = evaluate([row("s1", v, e, "clean", ref, h) for (v, e), h in hyps.items()], ScoreConfig(bootstrap=0))
    words = {w.word: w for w in failing.words(r, family)}
    assert words["king"].points_at == "text"  # both families, in every voice
    assert words["queen"].points_at == "ASR sphinx"  # one family, where the other heard it right
    assert words["dawn"].points_at == "ASR whisper"  # both Whisper engines: still one family
    assert words["joy"].points_at == "ASR sphinx"
    assert (words["king"].families_failed, words["king"].families_heard) == (2, 2)
    assert (words["dawn"].engines_failed, words["dawn"].families_failed) == (2, 1)
    r = evaluate([row("s1", v, e, "clean", ref, h.replace("rides", "hides") if v == "b:2" else h)
                  for (v, e), h in hyps.items()], ScoreConfig(bootstrap=0))
    words = {w.word: w for w in failing.words(r, family)}
    assert words["rides"].points_at == "voice b:2"  # every family fails it, in one voice of two
    assert failing.verdict({"a:1": {"whisper", "sphinx"}}, {"a:1": {"whisper", "sphinx"}}) == "voice or text"
    (a, b) = agreement.agreement(r.utterances, family)
    assert (a.voice, a.families, a.agreement, a.family_agreement) == ("a:1", 2, 0.0, 0.0)
    one = evaluate([row("s1", "a:1", e, "clean", ref, ref) for e in ("fw:base", "ow:base")], ScoreConfig(bootstrap=0))
    (c,) = agreement.agreement(one.utterances, family)
    assert (c.families, c.agreement, c.family_agreement) == (1, 1.0, None)  # one family: no cross-family figure
    # noise that defeats every engine does not make the verdict: it comes from the clean audio
    noisy = [row("s1", v, e, "noise:snr=0", ref, "") for (v, e) in hyps]
    r = evaluate([row("s1", v, e, "clean", ref, h) for (v, e), h in hyps.items()] + noisy, ScoreConfig(bootstrap=0))
    words = {w.word: w for w in failing.words(r, family)}
    assert words["queen"].points_at == "ASR sphinx" and words["queen"].failures == 1 + 5  # counts: every condition


def test_blame_is_the_share_of_words_each_way_with_a_bootstrap_interval():
    family = {"fw:base": "whisper", "ps:en": "sphinx"}.get
    ref = "the king rides to the queen"  # 6 words; in each sentence: one failed by both, one by sphinx alone
    rows = []
    for i in range(10):
        rows.append(row(f"s{i}", "a:1", "fw:base", "clean", ref, "the thing rides to the queen"))
        rows.append(row(f"s{i}", "a:1", "ps:en", "clean", ref, "the thing rides to a queen" if i % 2 else
                        "the thing hides to the queen"))
    r = evaluate(rows, ScoreConfig(bootstrap=0))
    shares = {b.points_at: b for b in blame.blame(r, family, n_boot=200)}
    assert set(shares) == {"voice or text", "ASR whisper", "ASR sphinx"}
    assert (shares["voice or text"].words, shares["voice or text"].failures, shares["voice or text"].rate) == (60, 10, 0.1667)
    assert shares["voice or text"].ci95_low == shares["voice or text"].ci95_high == pytest.approx(1 / 6, abs=1e-4)
    assert (shares["ASR sphinx"].failures, shares["ASR whisper"].failures) == (10, 0)
    assert blame.blame(r, lambda e: "one") == []  # one family: no verdict to give


def test_engine_agreement_is_the_share_of_identical_hypotheses():
    rows = [row(s, "a:1", e, "clean", text, text if (e == "e:1" or i < 3) else with_errors(text, 1))
            for e in ("e:1", "e:2") for i, (s, text) in enumerate(sentences(4))]
    r = evaluate(rows, ScoreConfig(bootstrap=0))
    (a,) = agreement.agreement(r.utterances)
    assert (a.engines, a.utterances, a.agreement) == (2, 4, 0.75)


def test_breakdown_snr_is_interpolated_where_wer_doubles():
    assert robustness.crossing(0.1, [(20, 0.1), (10, 0.3)]) == pytest.approx(15.0)
    assert robustness.crossing(0.1, [(20, 0.15), (10, 0.18)]) is None
    assert robustness.crossing(0.0, [(20, 0.0), (10, 0.04)]) == pytest.approx(15.0)  # the 0.02 floor
    rows = []
    for s, text in sentences(10):
        for condition, k in (("clean", 1), ("noise:snr=20", 1), ("noise:snr=10", 3)):
            rows.append(row(s, "v:1", "e:1", condition, text, with_errors(text, k)))
    r = evaluate(rows, ScoreConfig(bootstrap=0))
    (b,) = robustness.breakdowns(r.utterances, 200)
    assert (b.clean_wer, b.threshold, b.breakdown_snr) == (0.1, 0.2, 15.0)
    assert b.ci95_low == b.ci95_high == 15.0  # every sentence alike: no spread
    assert b.curve == [(20, 0.1), (10, 0.3)]


def test_the_macro_ci_is_a_bootstrap_of_the_mean_sentence_wer_resampling_sentences():
    import numpy as np

    rng = random.Random(5)
    rows = [row(s, "v:1", "asr:x", "clean", text, with_errors(text, rng.randrange(0, 6)))
            for s, text in sentences(30)]
    (summary,) = evaluate(rows, ScoreConfig(bootstrap=500, seed=7)).summary
    scored = evaluate(rows, ScoreConfig(bootstrap=0)).utterances
    wer = np.array([u.errors / u.ref_words for u in scored])
    draws = np.random.default_rng(7).integers(0, len(wer), size=(500, len(wer)))  # resample sentences, with repeats
    low, high = np.percentile(wer[draws].mean(axis=1), [2.5, 97.5])
    assert (summary.macro_ci95_low, summary.macro_ci95_high) == (round(low, 4), round(high, 4))
    assert summary.macro_ci95_low < summary.macro_wer < summary.macro_ci95_high
    assert (summary.macro_ci95_low, summary.macro_ci95_high) != (summary.ci95_low, summary.ci95_high)


def rejections(n: int, delta: float, sd: float, trials: int, seed: int, alpha: float = 0.05) -> float:
    """The share of simulated paired comparisons of n sentences, each difference N(delta, sd), that a two-sided
    paired t-test at alpha finds significant."""
    import numpy as np
    from scipy.stats import ttest_1samp

    d = np.random.default_rng(seed).normal(delta, sd, size=(trials, n))
    return float(np.mean(ttest_1samp(d, 0.0, axis=1).pvalue < alpha))


@pytest.mark.parametrize("n, observed", [(11, 0.3), (40, 0.15)])
def test_the_power_figures_hold_in_simulation(n, observed):
    """docs/statistics.md: a difference of `detectable` is found 80% of the time with these sentences, and the
    observed difference with `needed` sentences."""
    import numpy as np

    from pipeline.scoring import paired

    sample = np.random.default_rng(n).normal(size=n)
    contributions = list((sample - sample.mean()) / sample.std(ddof=1) + observed)  # spread 1, mean the Δ seen
    power = paired.power(contributions, observed)
    assert 0.76 <= rejections(n, power.detectable, 1.0, 4000, seed=1) <= 0.84
    assert 0.76 <= rejections(power.needed, observed, 1.0, 4000, seed=2) <= 0.84
    assert 0.55 <= rejections(int(0.7 * power.needed), observed, 1.0, 4000, seed=3) <= 0.75  # fewer would not do


def test_a_pooled_rates_spread_is_the_paired_bootstraps():
    import numpy as np

    from pipeline.scoring import paired

    rng = np.random.default_rng(3)
    words = rng.integers(3, 25, size=300)
    ea = rng.binomial(words, 0.1)
    eb = rng.binomial(words, 0.13)
    contributions = paired.pooled_contributions(list(ea), list(eb), list(words))
    assert np.mean(contributions) == pytest.approx((eb.sum() - ea.sum()) / words.sum())
    draws = rng.integers(0, len(words), size=(4000, len(words)))
    boot = (eb[draws].sum(1) - ea[draws].sum(1)) / words[draws].sum(1)
    assert np.std(contributions, ddof=1) / np.sqrt(len(words)) == pytest.approx(boot.std(), rel=0.08)


def test_a_comparison_that_finds_nothing_says_what_it_could_have_found():
    rows = []
    for i, (s, text) in enumerate(sentences(10)):
        rows.append(row(s, "a:1", "asr:x", "clean", text, with_errors(text, i % 2)))
        rows.append(row(s, "b:2", "asr:x", "clean", text, with_errors(text, (i + 1) % 3)))
    (c,) = compare(evaluate(rows, ScoreConfig(bootstrap=200)), 200)
    assert c.mapsswe_p_holm >= 0.05 and c.detectable_delta > abs(c.delta_wer) > 0 and c.sentences_needed > 10
    assert f"10 sentences detect |Δ| ≥ {c.detectable_delta:.3f} (80% power, α 0.05)" in c.verdict
    assert f"would take about {c.sentences_needed}" in c.verdict


def test_statistics_are_read_by_name_and_the_old_attribute_still_answers_with_a_note():
    from pipeline.statistics import Statistics

    stats = Statistics("basic", 10, comparisons=[1, 2])
    assert stats["comparisons"] == [1, 2]
    with pytest.warns(DeprecationWarning, match=r'stats\["comparisons"\]'):
        assert stats.comparisons == [1, 2]
    with pytest.raises(KeyError, match="no statistic 'nope'; known: comparisons"):
        stats["nope"]
    with pytest.raises(AttributeError):
        stats.nope


def test_a_recipes_normalizer_column_counts_as_the_recipe_aligns():
    """Two pairs where jiwer's alignment (seed-tts-eval's, cv3-eval's) makes another number of edits than sclite's
    weights: their normalizer columns equal a run scored under them, the basic column sclite's count of the same
    words, so the table says what each normalizer's run would."""
    from pipeline.scoring.align import align_codes, jiwer_codes, tally

    refs, hyps = ["a a a c d d", "a a d a d b b d"], ["b d a b b b a a", "c c b a a a"]
    sclite = sum(sum(tally(c)[1:]) for c in align_codes([r.split() for r in refs], [h.split() for h in hyps]))
    jiwer = sum(sum(tally(c)[1:]) for c in jiwer_codes([r.split() for r in refs], [h.split() for h in hyps]))
    assert sclite != jiwer  # the case this test is about
    rows = [row(f"u{k}", "v:1", "e:1", "clean", r, h) for k, (r, h) in enumerate(zip(refs, hyps))]
    seed = evaluate(rows, ScoreConfig(normalize="seed-tts-eval", bootstrap=0))
    (e,) = sensitivity.effects(seed.utterances, "seed-tts-eval")
    words = sum(len(r.split()) for r in refs)
    assert e.wer["wer_seed-tts-eval"] == e.wer["wer_cv3-eval"] == round(jiwer / words, 4) == seed.summary[0].micro_wer
    assert e.wer["wer_basic"] == round(sclite / words, 4)
    assert sensitivity.effects([], "basic") == []


def test_sentences_with_nothing_to_say_have_no_breakdown_snr_and_count_where_others_do():
    """Words written in noise over empty references are insertions, but with no reference word anywhere there is
    no rate to break down; beside sentences that have words, they count in the pooled curve."""
    def scored(references):
        pairs = [Pair(sentence_id=f"s{k}", reference=r, hypothesis=h, voice="v", asr="e", condition=c)
                 for k, r in enumerate(references) for c, h in (("clean", r), ("noise:snr=5", "uh"))]
        return evaluate(pairs, ScoreConfig(normalize="none", bootstrap=0)).utterances

    assert robustness.breakdowns(scored(["", "", ""]), 20) == []
    (b,) = robustness.breakdowns(scored(["", "the king"]), 20)
    assert b.clean_wer == 0.0 and b.curve[0].wer == 1.5  # "uh" twice: one insertion, one substitution and a deletion
