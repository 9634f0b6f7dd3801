"""The release gate's own rules, on comparisons made by hand: what it counts as a test, and when it says that it
cannot fail (compare-runs prints it beside the verdict)."""
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
