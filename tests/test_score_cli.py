import subprocess
import sys

from pipeline.core import store
from pipeline.core.records import columns
from pipeline.scoring.utterances import ScoredUtterance
from pipeline.scoring import sclite
from tests.helpers import ROOT


def score(*args):
    return subprocess.run([sys.executable, str(ROOT / "run_pipeline.py"), "score", *args],
                          capture_output=True, text=True, cwd=ROOT)


def test_plain_files_give_the_same_csvs_as_the_pipeline(tmp_path):
    (tmp_path / "ref.txt").write_text("I am very tired today\nUm I left this phone upstairs last night\n")
    (tmp_path / "hyp.txt").write_text("I am tired today\nMy sister her phone it stores less nine\n")
    proc = score("--ref", str(tmp_path / "ref.txt"), "--hyp", str(tmp_path / "hyp.txt"), "--normalize", "none",
                 "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    rows = store.read_csv(tmp_path / "out" / "utterances.csv")
    # transcripts without an LM: no perplexity or surprisal column, every other one in order
    assert list(rows[0]) == [c for c in columns(ScoredUtterance) if c not in ("perplexity", "word_surprisal")]
    assert [r["wer"] for r in rows] == ["0.2", "1.0"]
    assert (rows[1]["substitutions"], rows[1]["deletions"], rows[1]["insertions"]) == ("6", "1", "1")
    summary = store.read_json(tmp_path / "out" / "summary.json")
    assert summary["groups"][0]["micro_wer"] == round(9 / 13, 4)
    for name in ("errors.csv", "confusions.csv", "summary.csv", "ref.trn", "hyp.trn", "pralign.txt", "dtl.txt"):
        assert (tmp_path / "out" / name).stat().st_size > 0
    assert "CONFUSION PAIRS" in (tmp_path / "out" / "dtl.txt").read_text()


def test_trn_files_are_matched_by_id_in_any_order(tmp_path):
    (tmp_path / "ref.trn").write_text("the king is dead (spk_a)\nlong live the king (spk_b)\n")
    (tmp_path / "hyp.trn").write_text("long live the thing (spk_b)\nthe king is dead (spk_a)\n")
    proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "hyp.trn"), "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    rows = {r["sentence_id"]: r for r in store.read_csv(tmp_path / "o" / "utterances.csv")}
    assert rows["spk_a"]["errors"] == "0" and rows["spk_b"]["errors"] == "1"
    assert [r["id"] for r in rows.values()] == ["spk_a", "spk_b"]  # the user's ids, in every file written
    assert [uid for uid, _ in sclite.read_trn((tmp_path / "o" / "hyp.trn").read_text())] == ["spk_a", "spk_b"]


def test_mismatched_ids_and_counts_are_clear_errors(tmp_path):
    (tmp_path / "ref.trn").write_text("a b (x_1)\nc d (x_2)\n")
    (tmp_path / "hyp.trn").write_text("a b (x_1)\nc d (x_3)\n")
    proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "hyp.trn"), "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "ids do not match" in proc.stderr and "x_2" in proc.stderr
    (tmp_path / "r.txt").write_text("a\nb\nc\n")
    (tmp_path / "h.txt").write_text("a\nb\n")
    proc = score("--ref", str(tmp_path / "r.txt"), "--hyp", str(tmp_path / "h.txt"), "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "has 3 lines" in proc.stderr and "h.txt has 2;" in proc.stderr


def test_score_loads_no_model():
    code = ("import sys; from pipeline.cli import main; import tempfile, pathlib; d = pathlib.Path(tempfile.mkdtemp()); "
            "(d/'r').write_text('a b\\n'); (d/'h').write_text('a c\\n'); "
            "main(['score', '--ref', str(d/'r'), '--hyp', str(d/'h'), '--out', str(d/'o')]); "
            "print(sorted(m for m in ('torch', 'whisper', 'faster_whisper', 'piper', 'ctranslate2') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"
