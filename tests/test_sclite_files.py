"""sclite's own test files (tests/data/sclite/NOTICE), scored by `run_pipeline.py score` as sclite scores them:
every utterance's hits, substitutions, deletions and insertions are those of Debian's sclite on the same files,
with the flags sclite's test suite gives them, and -D -F."""
import subprocess
from pathlib import Path

import pytest

from tests.helpers import SCLITE, assert_nce_as_sclites, pralign_rows, sclite_nce, utterance_counts
from tests.test_score_cli import score

FILES = Path(__file__).parent / "data" / "sclite"
CASES = {  # name: reference, hypothesis, sclite's flags, score's
    "edge cases": ("tests.ref", "tests.hyp", ["-i", "spu_id"], []),
    "edge cases -D -F": ("tests.ref", "tests.hyp", ["-i", "spu_id", "-D", "-F"], ["--optional-words", "--fragments"]),
    "read news, ids in another case": ("csrnab.ref", "csrnab.hyp", ["-i", "spu_id"], []),
    "stm and ctm alternations": ("lvc_ref.stm", "lvc_hyp.ctm", [], []),
    "stm and ctm alternations -D -F": ("lvc_ref.stm", "lvc_hyp.ctm", ["-D", "-F"], ["--optional-words", "--fragments"]),
    "stm and ctm, a way of no word": ("lvc_refr.stm", "lvc_hypr.ctm", [], []),
    "cantonese characters": ("test.cantonese.stm", "test.cantonese.ctm", ["-e", "utf-8", "-c", "NOASCII"],
                             ["--language", "yue"]),
    "ctm reference": ("tima_ref.ctm", "tima_hyp.ctm", [], []),
    "ctm reference -D": ("tima_ref.ctm", "tima_hyp.ctm", ["-D"], ["--optional-words"]),
    "ctm reference -T": ("tima_ref.ctm", "tima_hyp.ctm", ["-T"], ["--time-mediated"]),
    "ctm reference -T -D": ("tima_ref.ctm", "tima_hyp.ctm", ["-T", "-D"], ["--time-mediated", "--optional-words"]),
}
SCTK_MASTER = {  # SCTK master's expected pralign of its tests 13, 13_D, 13_a and 13_aD (a ctm reference), and
    # score's flags
    "test13.pra": [], "test13_D.pra": ["--optional-words"], "test13_a.pra": ["--time-mediated"],
    "test13_aD.pra": ["--time-mediated", "--optional-words"]}


@pytest.mark.skipif(not Path(SCLITE).exists(), reason="needs Debian sctk")
@pytest.mark.parametrize("case", list(CASES))
def test_sclites_own_test_files_count_as_sclite_counts_them(tmp_path, case):
    ref, hyp, flags, ours = CASES[case]
    for name in (ref, hyp):  # under the names sclite reads them by
        (tmp_path / name).write_bytes((FILES / name).read_bytes())
    kinds = {".stm": ["stm", "ctm"], ".ctm": ["ctm", "ctm"]}.get(Path(ref).suffix, ["trn", "trn"])
    proc = score("--ref", str(tmp_path / ref), "--hyp", str(tmp_path / hyp), "--normalize", "sclite", *ours,
                 "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    counted = utterance_counts(tmp_path / "out")
    told = subprocess.run([SCLITE, "-r", ref, kinds[0], "-h", hyp, kinds[1], *flags, "-o", "pralign", "stdout"],
                          cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert len(counted) >= 3 and counted == {uid: c for uid, (c, _, _) in pralign_rows(told).items()}


@pytest.mark.skipif(not Path(SCLITE).exists(), reason="needs Debian sctk")
def test_the_cantonese_ctms_confidences_give_sclites_nce(tmp_path):
    """The one of sclite's test files whose words carry confidences: its NCE (each character with its word's
    confidence, as sclite's -c splits them) is that of sclite's sum report."""
    ref, hyp, flags, ours = CASES["cantonese characters"]
    proc = score("--ref", str(FILES / ref), "--hyp", str(FILES / hyp), "--normalize", "sclite", *ours, "--out",
                 str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    told = subprocess.run([SCLITE, "-r", str(FILES / ref), "stm", "-h", str(FILES / hyp), "ctm", *flags, "-o", "sum",
                           "stdout"], capture_output=True, text=True, check=True).stdout
    assert sclite_nce(told)["Sum/Avg"] == "-0.163"
    assert_nce_as_sclites(tmp_path, sclite_nce(told))
    assert "NCE of the ctm's word confidences (sclite's normalized cross entropy): -0.163 over 53 hypothesis " \
           "characters" in proc.stdout


@pytest.mark.parametrize("expected", list(SCTK_MASTER))
def test_a_ctm_reference_chopped_as_sctk_master_counts_as_its_own_test_expects(tmp_path, expected):
    """SCTK master's chop (--ctm-chop master, after its commit 82955db) gives every chunk the counts of the expected
    output in SCTK's own test suite, aligned by words and by time (-T), with and without -D; every released
    sclite's, the default, gives some other counts."""
    base = {uid: counts for uid, (counts, _, _) in pralign_rows((FILES / expected).read_text()).items()}
    for chop in ("master", "released"):
        proc = score("--ref", str(FILES / "tima_ref.ctm"), "--hyp", str(FILES / "tima_hyp.ctm"), "--normalize",
                     "sclite", *SCTK_MASTER[expected], "--ctm-chop", chop, "--out", str(tmp_path / chop))
        assert proc.returncode == 0, proc.stderr
        assert len(base) == 22 and (utterance_counts(tmp_path / chop) == base) == (chop == "master")
