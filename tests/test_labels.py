"""`score`'s labels.csv: the test subsets an stm reference defines, scored as sclite's labeled utterance report
(`-o lur`) scores them; and hubscr.pl's own example, reproduced to every number of its reports."""
import random
import re
from pathlib import Path

import pytest

from pipeline.core import store
from pipeline.scoring import labels
from tests.helpers import SCLITE
from tests.test_score_cli import score
from tests.test_stm import random_files, sclite_report

HUBSCR = Path(__file__).parent / "data" / "hubscr"
needs_sclite = pytest.mark.skipif(not Path(SCLITE).exists(), reason="Debian's sctk (sclite) is not installed")


def f_round(errors: int, words: int) -> str:
    """sclite's %WE cell: pct() rounded by F_ROUND to one decimal, half away from zero."""
    return f"{int((100 * errors / words if words else 0) * 10 + 0.5) / 10:.1f}"


def lur_rows(text: str) -> dict[str, list[tuple[int, str] | None]]:
    """Each row of a lur table (a speaker's, Set Sum/Avg, Mean, StdDev, Median) by its first cell: each label's
    (#Wrd, %WE) as printed, None where the cell is blank; a speaker with no reference word as (0, '* n *')."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not (line.startswith("|") and line.endswith("|")) or "#Wrd" in line or "->" in line:
            continue
        cells = [c.strip() for c in line[1:-1].split("|") if c != ""]  # `||` marks a category's edge
        if len(cells) < 2 or not cells[0] or cells[0] == "SPKR":
            continue
        row = []
        for cell in cells[1:]:
            found = re.fullmatch(r"\[(\d+)\]\s+(-?[\d.]+)|(\d+)\s+(\* \d+ \*)", cell)
            row.append(None if not cell else (int(found[1]), found[2]) if found[1] else (int(found[3]), found[4]))
        out[cells[0]] = row
    return out


def ours_as_lur(rows: list[dict], order: list[str]) -> dict[str, list]:
    """labels.csv's rows as the lur's cells: counts exactly as sclite prints them; Mean, StdDev and Median as
    fractions, to compare within sclite's rounding."""
    by = {(r["label"], r["speaker"]): r for r in rows}
    speakers = list(dict.fromkeys(r["speaker"] for r in rows if r["speaker"]))
    out = {}
    for speaker in speakers:
        out[speaker] = []
        for label in order:
            r = by.get((label, speaker))
            words, errors = (int(r["ref_words"]), int(r["errors"])) if r else (0, 0)
            out[speaker].append(None if not (words or errors) else (words, f_round(errors, words)) if words
                                else (0, f"* {errors} *"))
    out["Set Sum/Avg"] = [(int(by[label, ""]["ref_words"]), f_round(int(by[label, ""]["errors"]),
                                                                      int(by[label, ""]["ref_words"])))
                          for label in order]
    for name, column in (("Mean", "mean_wer"), ("StdDev", "sd_wer"), ("Median", "median_wer")):
        out[name] = [float(by[label, ""][column] or 0) for label in order]
    return out


def same_as_lur(rows: list[dict], theirs: dict[str, list], order: list[str]) -> None:
    ours = ours_as_lur(rows, order)
    for name in ("Mean", "StdDev", "Median"):
        printed = theirs.pop(name) if name in theirs else theirs.pop(f"{name} +")
        assert all(abs(100 * o - float(t[1])) <= 0.0501 for o, t in zip(ours.pop(name), printed)), (name, printed)
    assert ours == theirs


def test_hubscr_pls_own_example_is_reproduced_to_every_number_of_its_reports(tmp_path):
    """hubscr.pl's test1 (tests/data/hubscr/NOTICE): its GLM, an stm of four speakers and two subsets (segments
    with and without alternations), a ctm whose words carry sclite's tags (`A\\;S;TAG1`). Every speaker's row of
    its .sys, and every cell of its .lur, from the files NIST ran hubscr.pl on."""
    proc = score("--ref", str(HUBSCR / "lvc_refe.stm"), "--hyp", str(HUBSCR / "lvc_hyp.ctm"), "--glm",
                 str(HUBSCR / "example.glm"), "--normalize", "sclite", "--optional-words", "--fragments", "--out",
                 str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    sys_rows = {cells[0]: cells[1:] for cells in (line.replace("|", " ").split() for line in
                (HUBSCR / "lvc_hyp.ctm.filt.sys").read_text().splitlines() if re.match(r"\s*\| \d{4}-", line))}
    assert len(sys_rows) == 4
    for r in store.read_csv(tmp_path / "speakers.csv"):
        words = int(r["ref_words"])
        percent = [f"{int(100 * int(r[c]) / words * 10 + 0.5) / 10:.1f}"
                   for c in ("hits", "substitutions", "deletions", "insertions", "errors")]
        assert sys_rows[r["speaker"]] == [r["n_utterances"], r["ref_words"], *percent,
                                          f_round(int(r["sentence_errors"]), int(r["n_utterances"]))], r
    rows = store.read_csv(tmp_path / "labels.csv")
    assert [(r["category"], r["label"], r["title"]) for r in rows if not r["speaker"]] == [
        ("", "O", "Overall"), ("Alternations", "WA", "With Alt"), ("Alternations", "NA", "NO Alt")]
    same_as_lur(rows, lur_rows((HUBSCR / "lvc_hyp.ctm.filt.lur").read_text()), ["O", "WA", "NA"])
    assert "WER by label (sclite -o lur): Overall 0.527 (1676 words), With Alt 0.495 (1206 words), NO Alt 0.609 " \
           "(470 words)" in proc.stdout


HEADER = """;; CATEGORY "0" "" ""
;; CATEGORY "1" "Sex" "Speaker sex"
;; CATEGORY "2" "Dialect" ""
;; LABEL "O" "Overall" "Overall"
;; LABEL "F" "Female" "Female speakers"
;; LABEL "M" "Male" "Male speakers"
;; LABEL "north" "North" "Northern"
;; LABEL "south" "South" "Southern"
;; LABEL "none" "Nobody" "a label no segment carries"
;; LABEL "F" "Female" "Female speakers"
"""


def labelled(rng: random.Random, folder: Path) -> None:
    """random_files' pair, each stm segment given labels: the overall one, a sex, and a dialect (some in another
    case, some places left empty, some segments with none), as the header defines them (one definition twice)."""
    lines = []
    for line in (folder / "ref.stm").read_text().splitlines():
        if line.startswith(";;"):
            continue
        fields = line.split(" ", 5)
        if rng.random() < 0.85:
            sex = rng.choice(["F", "M", "f", ""])
            dialect = rng.choice(["north", "south", "NORTH"])
            fields.insert(5, f"<O,{sex},{dialect}>" if rng.random() < 0.8 else f"<O,{sex}>")
        lines.append(" ".join(fields) + "\n")
    (folder / "ref.stm").write_text(HEADER + "".join(lines))


@needs_sclite
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_random_labelled_segments_are_counted_as_sclites_lur_counts_them(tmp_path, seed):
    """Every cell of sclite's lur: each speaker's #Wrd and %WE under each label (a speaker with insertions and no
    reference word as sclite marks it), the Set Sum/Avg, and the Mean, StdDev and Median over the speakers."""
    rng = random.Random(seed)
    random_files(rng, tmp_path)
    labelled(rng, tmp_path)
    proc = score("--ref", str(tmp_path / "ref.stm"), "--hyp", str(tmp_path / "hyp.ctm"), "--normalize", "sclite",
                 "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    rows = store.read_csv(tmp_path / "out" / "labels.csv")
    assert [r["label"] for r in rows if not r["speaker"]] == ["O", "F", "M", "north", "south", "none"]
    assert {r["category"] for r in rows if r["label"] in ("north", "south")} == {"Dialect"}
    theirs = {name: cells for name, cells in lur_rows(sclite_report(tmp_path, "lur")).items()
              if any(cells)}  # a speaker none of whose segments is labelled has a row of blank cells
    same_as_lur(rows, theirs, ["O", "F", "M", "north", "south", "none"])


def test_a_label_sclite_would_stop_at_is_named_and_the_rest_is_scored(tmp_path):
    (tmp_path / "hyp.ctm").write_text("f1 A 0.1 0.2 the\nf1 A 2.5 0.2 on\n")
    for carried, said in (("<O,X>", "line 4: label 'X' of <O,X> is not defined"),
                          ("<F>", "line 4: label 'F' of <F> is in place 1, and in place 2 elsewhere")):
        (tmp_path / "ref.stm").write_text(';; LABEL "O" "Overall" ""\n;; LABEL "F" "Female" ""\n'
                                          f"f1 A s1 0.0 2.0 <O,F> the cat\nf1 A s1 2.0 4.0 {carried} on the mat\n")
        proc = score("--ref", str(tmp_path / "ref.stm"), "--hyp", str(tmp_path / "hyp.ctm"), "--out",
                     str(tmp_path / "out"))
        assert proc.returncode == 0, proc.stderr
        assert f"labels.csv not written: {tmp_path / 'ref.stm'} {said}" in proc.stdout
        assert not (tmp_path / "out" / "labels.csv").exists()
        assert len(store.read_csv(tmp_path / "out" / "utterances.csv")) == 2


def test_labels_csv_is_asked_for_only_of_an_stm_that_defines_labels(tmp_path):
    (tmp_path / "ref.stm").write_text("f1 A s1 0.0 2.0 <O,F> the cat\n")
    (tmp_path / "hyp.ctm").write_text("f1 A 0.1 0.2 the\n")
    proc = score("--ref", str(tmp_path / "ref.stm"), "--hyp", str(tmp_path / "hyp.ctm"), "--outputs", "labels.csv",
                 "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and "--outputs labels.csv: its subsets are the labels an stm reference defines" \
        in proc.stderr and "Traceback" not in proc.stderr
    proc = score("--ref", str(tmp_path / "ref.stm"), "--hyp", str(tmp_path / "hyp.ctm"), "--out", str(tmp_path / "out"))
    assert proc.returncode == 0 and not (tmp_path / "out" / "labels.csv").exists() and "by label" not in proc.stdout


def test_a_segments_labels_are_cut_into_places_as_sclite_cuts_them():
    assert labels.places("<O,F0,M>") == [(0, "O"), (1, "F0"), (2, "M")]
    assert labels.places("<O,,M>") == [(0, "O"), (2, "M")]
    assert labels.places("<O>") == [(0, "O")] and labels.places("<>") == []
