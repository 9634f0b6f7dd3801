"""The release gate's own rules, on comparisons made by hand: what it counts as a test, and when it says that it
cannot fail (compare-runs prints it beside the verdict)."""
import re

import pytest

from pipeline.gate.release import ALPHA, RunComparison, reach
from pipeline.scoring.paired import smallest_p

EXACT = "Wilcoxon signed-rank, exact"


def row(metric: str, sentences: int, test: str = EXACT, derived_from: str = "") -> RunComparison:
    return RunComparison(asr_condition=("faster-whisper:tiny.en", "clean"), voice_a="v1", voice_b="v2", metric=metric,
                         sentences=sentences, a=0.1, b=0.2, delta=0.1, ci95_low=0.05, ci95_high=0.15, test=test, p=0.5,
                         p_holm=0.5, mapsswe_z=None, sign_b_worse=None, sign_b_better=None, sign_p=None,
                         wilcoxon_z=None, wilcoxon_p=0.5, worse=False, margin=0.05, verdict="",
                         derived_from=derived_from)


def test_a_gate_of_five_sentences_says_it_cannot_fail_and_a_derived_column_is_no_second_test():
    rows = [row("macro_wer", 5), row("cer", 5), row("dnsmos_ovrl", 5),
            row("calibrated_dnsmos_ovrl", 5, derived_from="dnsmos_ovrl")]
    found = reach(rows)
    assert found.tests == 3  # the calibrated line of dnsmos_ovrl is not counted
    assert found.smallest["cer"] == 3 * smallest_p(5) == 3 * 2 / 32
    said = found.said(5)
    assert "with 5 sentences and 3 metrics the smallest p is 0.188" in said and "the gate cannot fail" in said


def test_ten_sentences_can_fail_a_gate_of_eight_metrics_but_not_of_thirty():
    assert reach([row(f"m{k}", 10) for k in range(8)]).said(10) == ""  # 8 × 2/1024 = 0.016
    assert 8 * smallest_p(10) < ALPHA < 30 * smallest_p(10)
    assert "cannot fail" in reach([row(f"m{k}", 10) for k in range(30)]).said(10)


def test_micro_wer_keeps_a_gate_that_can_fail_and_the_others_are_named():
    said = reach([row("wer", 4, test="MAPSSWE"), row("cer", 4), row("dnsmos_ovrl", 4)]).said(4)
    assert "cannot fail" not in said and "cer, dnsmos_ovrl cannot reach p < 0.05" in said


def test_a_run_manifest_is_one_typed_record_and_a_newer_one_is_refused_by_name(tmp_path):
    """The manifest a run writes reads back as the same record; one of a newer shape is refused, naming the file,
    before anything of it is used."""
    from pipeline.core import store
    from pipeline.core.manifest import Computation, Model, RunManifest, Seeds
    from pipeline.errors import InputError
    from pipeline.gate import sealed

    written = RunManifest(config={"score": {"headline": "macro"}}, seeds=Seeds(train=1, sample=2, tts=3, bootstrap=4),
                          models={"x:y": Model(spec="x:y", found="path", path="/m", files={"/m": "ab"})},
                          computation=Computation(scoring_revision=2), complete=True, sealed={"a.csv": "cd"})
    written.write(tmp_path)
    data = store.read_record(tmp_path / "manifest.json")
    assert data["scoring_revision"] == 2 and data["manifest_version"] == 1  # the file keeps its keys
    back = RunManifest.read(tmp_path)
    assert back == written and back.setting("score.headline") == "macro" and back.setting("asr.engines", []) == []
    store.write_record(tmp_path / "manifest.json", {**data, "manifest_version": 2})
    with pytest.raises(InputError, match=r"manifest.json: manifest_version 2: written by a newer version"):
        sealed.load(str(tmp_path))


def test_what_no_exact_test_can_find_is_not_promised_and_needs_the_sentences_that_reach():
    """Five sentences and seven metrics, as a first comparison of two voices: the t-test's power figures would
    promise a Δ of 0.85 is found with 80% power, but the exact test's p cannot go below 0.375 once Holm-corrected,
    so nothing is promised; and a Δ needs at least the sentences that bring that floor under α."""
    from pipeline.gate.release import floors
    from pipeline.scoring.paired import Power, holm, within_reach
    from pipeline.statistics.comparisons import undetected

    rows = [row("wer", 5, test="MAPSSWE"), *(row(f"m{k}", 5) for k in range(6))]
    found = within_reach([Power(0.85, 3)] * 7, floors(rows))
    assert found[0] == Power(0.85, 3, 0.0)  # MAPSSWE has no floor: the t-test's figures stand
    assert found[1] == Power(None, 8, holm([0.0, *[smallest_p(5)] * 6])[1]) and found[1].floor == 6 * 2 / 32
    # 8 is the fewest sentences whose floor, Holm-corrected beside the others as they are, is under α: by brute force
    least = min(n for n in range(1, 64) if holm([0.0, smallest_p(n), *[smallest_p(5)] * 5])[1] < ALPHA)
    assert least == 8
    said = undetected(5, -1.13, found[1])
    assert "its p cannot go below 0.375" in said and "would take about 8" in said and "detect |Δ|" not in said
    assert within_reach([Power(0.3, 40)], [smallest_p(40)]) == [Power(0.3, 40, smallest_p(40))]  # nothing to add


def test_micro_wer_has_no_floor_so_the_exact_tests_beside_it_are_corrected_for_fewer():
    """Holm's least for each test is its correction with every test at its own floor: ten MAPSSWE tests, whose p
    can go to 0, leave twenty exact tests of ten sentences a floor of 20 × 2/1024 = 0.039, which can fail the
    gate; thirty tests times the floor (0.059) said it could not."""
    rows = [*(row(f"wer{k}", 10, test="MAPSSWE") for k in range(10)), *(row(f"m{k}", 10) for k in range(20))]
    found = reach(rows)
    assert found.smallest["m0"] == pytest.approx(20 * smallest_p(10)) and found.said(10) == ""
    assert 20 * smallest_p(10) < ALPHA < 30 * smallest_p(10)


def test_the_gate_counts_words_written_where_nothing_was_said_in_the_pooled_wer_and_the_macro_leaves_them_out(
        tmp_path):
    """Two sentences of no word, where B writes words: the gate's micro WER and its MAPSSWE count them, as the
    runs' summaries do; the macro WER is the mean of the sentences that have one; none is left unpaired."""
    from pipeline.core.manifest import RunManifest
    from pipeline.gate.release import compare
    from pipeline.gate.sealed import Run
    from pipeline.render import ab
    from pipeline.scoring.config import ScoreConfig
    from pipeline.scoring.evaluate import evaluate
    from pipeline.scoring.utterances import Pair

    words = "the king rode north at dawn with his men".split()
    refs = [" ".join(words[k % 3:k % 3 + 6]) for k in range(12)] + ["", ""]
    said = {"a": refs, "b": [r.rsplit(" ", 1)[0] + " then" if k < 4 else r for k, r in enumerate(refs[:12])]
            + ["uh huh", "yes"]}

    def run(name: str, headline: str) -> Run:
        pairs = [Pair(sentence_id=f"s{k}", reference=r, hypothesis=h, voice="v", asr="e", condition="clean")
                 for k, (r, h) in enumerate(zip(refs, said[name]))]
        manifest = RunManifest(config={"asr": {"engines": ["e"]}, "score": {"headline": headline}})
        return Run(name, tmp_path, manifest, evaluate(pairs, ScoreConfig(normalize="none", bootstrap=100)), {})

    rows, pairing, changes = compare(run("a", "micro"), run("b", "micro"), n_boot=100)
    (wer,) = [r for r in rows if r.metric == "wer"]
    assert (wer.sentences, wer.a, wer.delta) == (14, 0.0, round(7 / 72, 4)) and not pairing.unmatched
    # ab.html's order, most worse first: words written where none were to be said, then the four ΔWER of 1/6
    assert [c.a.sentence_id for c in changes[:6]] == ["s12", "s13", "s0", "s1", "s2", "s3"]
    assert [c.delta_wer for c in changes[:3]] == [None, None, pytest.approx(1 / 6, abs=1e-4)]
    assert [c.delta_errors for c in changes[:2]] == [2, 1] and {c.worse_by for c in changes[6:]} == {0}
    page = ab.render(run("a", "micro"), run("b", "micro"), rows, changes, [], tmp_path)
    cells = re.findall(r'<td data-v="([^"]*)"[^>]*>([^<]*)</td>', page.split("most worse first")[1])
    assert cells[:3] == [("Infinity", "+2 words"), ("Infinity", "+1 word"), ("0.1667", "+0.167")]
    assert ab.SILENT in page
    assert (wer.sign_b_worse, wer.sign_b_better) == (4, 0)  # per-sentence WER: the twelve that have one
    summary = run("b", "micro").scores.summary[0]
    assert summary.micro_wer == wer.b and (summary.n_utterances, summary.n_excluded) == (14, 0)
    rows, _, _ = compare(run("a", "macro"), run("b", "macro"), n_boot=100)
    (macro,) = [r for r in rows if r.metric == "macro_wer"]
    assert macro.sentences == 12 and macro.b == round(4 * (1 / 6) / 12, 4)
    refs[:12] = [""] * 12  # sentences none of which has a word to say: no rate to pool, and no rate compared
    for headline in ("micro", "macro"):
        rows, _, _ = compare(run("a", headline), run("b", headline), n_boot=100)
        assert not {r.metric for r in rows} & {"wer", "macro_wer", "cer"}
