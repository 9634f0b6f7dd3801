"""`score --ref ref.stm --hyp hyp.ctm`: NIST's stm references and ctm hypotheses, cut into utterances and counted as
sclite cuts and counts them (`sclite -r ref.stm stm -h hyp.ctm ctm`)."""
import random
import re
import subprocess
from pathlib import Path

import pytest

from pipeline.core import store
from pipeline.scoring import stm
from tests.helpers import SCLITE, assert_nce_as_sclites, pralign_rows, sclite_nce, utterance_counts
from tests.test_score_cli import score

needs_sclite = pytest.mark.skipif(not Path(SCLITE).exists(), reason="Debian's sctk (sclite) is not installed")

REFERENCE = """;; a comment
** a comment that carries information
f1 A spk-1 0.0 2.0 <o,f0,male> the cat sat
f1 A spk-1 2.0 4.0 on the mat
f1 A spk2 4.0 6.0 IGNORE_TIME_SEGMENT_IN_SCORING
f1 A spk2 6.0 8.0 hello there
f1 B spk3 0.0 3.0 good morning
"""
HEARD = """; a ctm comment
f1 A 0.1 0.2 the
f1 A 0.5 0.2 hat
f1 A 1.95 0.2 sat
f1 A 2.5 0.2 on
f1 A 3.0 0.2 mat
f1 A 4.5 0.2 xx
f1 A 6.5 0.2 hello
f1 A 9.0 0.2 extra
f1 B 0.5 0.3 good
"""


def test_each_segment_takes_the_words_whose_midpoint_falls_before_its_end(tmp_path):
    """sclite's cut of this pair of files (its pralign, checked by hand; the comment lines read past as sclite reads
    past them): `sat` at 1.95 + 0.1 is past the first segment's end; `xx` falls in an ignored segment and is
    dropped; `extra`, after every segment, joins the channel's last; channel B's speaker is spk3; each speaker's
    segments are numbered from 000."""
    (tmp_path / "ref.stm").write_text(REFERENCE)
    (tmp_path / "hyp.ctm").write_text(HEARD)
    cut = stm.utterances(stm.read_stm(str(tmp_path / "ref.stm")), stm.read_ctm(str(tmp_path / "hyp.ctm")), "hyp.ctm")
    assert cut.utterances == [("spk-1-000", "the cat sat", "the hat"), ("spk-1-001", "on the mat", "sat on mat"),
                              ("spk2-000", "hello there", "hello extra"), ("spk3-000", "good morning", "good")]
    assert [stm.speaker_of(uid) for uid, _, _ in cut.utterances] == ["spk-1", "spk-1", "spk2", "spk3"]
    assert (cut.channels, cut.ignored_segments, cut.ignored_words) == (2, 1, 1)


def random_files(rng: random.Random, folder: Path, alternations: bool = False,
                 confident: random.Random | None = None) -> None:
    """Three channels of segments, some with gaps between them, some ignored, some of no word, a channel the ctm has
    no word of; words before, between, across and after the segments, some with a midpoint exactly on an end;
    `alternations`: some words then ctm alternations of two or three ways, a way of one or two words or of none;
    `confident`: each word's confidence drawn from it (0 and 1, and some outside them, among them), else 0.9."""
    def conf() -> str:
        if confident is None:
            return "0.9"
        return str(confident.choice([0, 1, -0.5, 1.5])) if confident.random() < 0.1 else f"{confident.random():.3f}"

    vocabulary = "a b c d the king my lord".split()
    speakers = ["sw-a", "sw-b", "spk_1", "x"]
    stm_lines, ctm_lines = [";; random\n"], []
    for file, channel, heard in (("f1", "a", True), ("f1", "b", True), ("f2", "a", True), ("f3", "a", False)):
        t, ends = 0.0, []
        for _ in range(rng.randint(3, 14)):
            start = t + rng.choice([0, 0, 0.5, 1.25])
            t = start + rng.randint(4, 16) / 4
            ends.append(t)
            text = ("IGNORE_TIME_SEGMENT_IN_SCORING" if rng.random() < 0.1
                    else " ".join(rng.choices(vocabulary, k=rng.choice([0, *range(1, 8)]))))
            stm_lines.append(f"{file} {channel} {rng.choice(speakers)} {start:.2f} {t:.2f} {text}\n")
        if not heard:
            continue
        words = [(round(rng.uniform(0, t + 2), 2), rng.randint(1, 40) / 100) for _ in range(rng.randint(5, 40))]
        words += [(end - 0.25, 0.5) for end in rng.sample(ends, 2)]  # its midpoint on the segment's end
        for start, duration in sorted(words):
            if not (alternations and rng.random() < 0.3):
                ctm_lines.append(f"{file} {channel} {start:.2f} {duration:.2f} {rng.choice(vocabulary)} {conf()}\n")
                continue
            ctm_lines.append(f"{file} {channel} * * <ALT_BEGIN>\n")
            for way in range(rng.choice([2, 2, 3])):
                if way:
                    ctm_lines.append(f"{file} {channel} * * <ALT>\n")
                for k in range(rng.choice([0, 1, 1, 2]) if way else rng.choice([1, 2])):
                    at = start if way == k == 0 else start + k * duration / 2 + rng.choice([0, 0.5, 1.5])  # sorted
                    word = rng.choice(vocabulary)
                    ctm_lines.append(f"{file} {channel} {at:.2f} {duration / 2:.2f} {word} {conf()}\n")
            ctm_lines.append(f"{file} {channel} * * <ALT_END>\n")
    (folder / "ref.stm").write_text("".join(stm_lines))
    (folder / "hyp.ctm").write_text("".join(ctm_lines))


def sclite_report(folder: Path, kind: str, *extra: str) -> str:
    return subprocess.run([SCLITE, "-r", "ref.stm", "stm", "-h", "hyp.ctm", "ctm", "-o", kind, "stdout", *extra],
                          cwd=folder, capture_output=True, text=True, check=True).stdout


def sclite_counts(folder: Path, *flags: str) -> dict[str, tuple[int, ...]]:
    """(H, S, D, I) of each utterance sclite scores of the folder's ref.stm and hyp.ctm."""
    return {uid: counts for uid, (counts, _, _) in pralign_rows(sclite_report(folder, "pralign", *flags)).items()}


def sclite_ignored(folder: Path) -> tuple[int, int]:
    """The segments and the words sclite's feedback says it ignored: each channel's count, summed."""
    told = sclite_report(folder, "sum", "-f", "1").replace("\r", "\n").split("Performing alignments")
    last = [re.findall(r"\((\d+) Ignored Segments, (\d+) Ignored Hyp Words", channel) for channel in told]
    return tuple(sum(int(found[-1][k]) for found in last if found) for k in (0, 1))


@needs_sclite
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_stm_and_ctm_files_are_cut_and_counted_as_sclite_cuts_and_counts_them(tmp_path, seed):
    """Every utterance's id and its hits, substitutions, deletions and insertions, and every speaker's row, are
    sclite's."""
    random_files(random.Random(seed), tmp_path)
    proc = score("--ref", str(tmp_path / "ref.stm"), "--hyp", str(tmp_path / "hyp.ctm"), "--normalize", "none",
                 "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    ours = utterance_counts(tmp_path / "out")
    assert len(ours) > 10 and ours == sclite_counts(tmp_path)
    segments, words = sclite_ignored(tmp_path)
    told = re.search(r"left out, as sclite leaves them out: (\d+) segments? marked IGNORE_TIME_SEGMENT_IN_SCORING "
                     r"and the (\d+) ctm words? in them", proc.stdout)
    assert segments > 0 and (int(told.group(1)), int(told.group(2))) == (segments, words)
    rows = (line.replace("|", " ").split() for line in sclite_report(tmp_path, "rsum").splitlines()
            if line.count("|") == 5)  # the ctm's confidences add sclite's NCE column
    speakers = {cells[0]: [int(x) for x in cells[1:9]] for cells in rows
                if cells[1].isdigit() and cells[0] != "Sum"}  # not the header, Mean, S.D. or Median
    columns = ("n_utterances", "ref_words", "hits", "substitutions", "deletions", "insertions", "errors",
               "sentence_errors")
    assert {r["speaker"]: [int(r[c]) for c in columns] for r in store.read_csv(tmp_path / "out" / "speakers.csv")} \
        == speakers


@needs_sclite
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ctm_alternations_are_placed_and_read_as_sclite_places_and_reads_them(tmp_path, seed):
    """`<ALT_BEGIN>` blocks in a ctm (a way of no word among them): each block joins the segment sclite gives it, and
    every utterance's counts are sclite's, with -D -F too."""
    random_files(random.Random(seed), tmp_path, alternations=True)
    assert "<ALT>" in (tmp_path / "hyp.ctm").read_text()
    for ours, theirs in ((["--normalize", "sclite"], []), (["--normalize", "sclite", "--optional-words",
                                                            "--fragments"], ["-D", "-F"])):
        proc = score("--ref", str(tmp_path / "ref.stm"), "--hyp", str(tmp_path / "hyp.ctm"), *ours, "--out",
                     str(tmp_path / "out"))
        assert proc.returncode == 0, proc.stderr
        counted = utterance_counts(tmp_path / "out")
        assert len(counted) > 10 and counted == sclite_counts(tmp_path, *theirs)


@needs_sclite
@pytest.mark.parametrize("seed, alternations", [(1, False), (2, False), (3, True)])
def test_the_nce_of_a_ctms_confidences_is_sclites(tmp_path, seed, alternations):
    """Every speaker's NCE and the set's (Sum/Avg, and Mean, S.D. and Median over the speakers) are those of sclite's
    sum report, on random files whose confidences include 0, 1 and some outside them: through ctm alternations too,
    where each way's words have their own."""
    random_files(random.Random(seed), tmp_path, alternations, confident=random.Random(seed + 100))
    proc = score("--ref", str(tmp_path / "ref.stm"), "--hyp", str(tmp_path / "hyp.ctm"), "--normalize", "sclite",
                 "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    told = subprocess.run([SCLITE, "-r", "ref.stm", "stm", "-h", "hyp.ctm", "ctm", "-o", "sum", "stdout"],
                          cwd=tmp_path, capture_output=True, text=True, check=True)
    assert_nce_as_sclites(tmp_path / "out", sclite_nce(told.stdout))
    whole = next(r for r in store.read_csv(tmp_path / "out" / "confidence.csv") if not r["speaker"])
    warned = re.search(r"Warning: (\d+) of (\d+) confidence scores were not in the range", told.stderr)
    assert (int(whole["outside"]), int(whole["hyp_words"])) == \
        ((int(warned[1]), int(warned[2])) if warned else (0, int(whole["hyp_words"])))
    assert f"NCE of the ctm's word confidences (sclite's normalized cross entropy): {float(whole['nce']):.3f} over " \
           f"{whole['hyp_words']} hypothesis words" in proc.stdout


def partial_files(rng: random.Random, folder: Path) -> None:
    """An stm of four channels and a ctm of part of each of three (the words of a stretch of its time, some before
    or after its segments, some ending on a segment's start, starting on one's end or on the last end, or with
    their midpoint on one's end: where sclite holds an stm's times in C floats, 4.1 is not 4.1), some ctm
    alternations inside a channel's words."""
    vocabulary = "a b c d the king my lord".split()
    stm_lines, ctm_lines = [], []
    for file, channel, heard in (("f1", "a", True), ("f1", "b", True), ("f2", "a", True), ("f3", "a", False)):
        t, times = rng.randint(0, 300) / 100, []
        for _ in range(rng.randint(3, 12)):
            start = round(t + rng.choice([0, 0, 0.3, 1.1]), 2)
            t = round(start + rng.randint(40, 400) / 100, 2)
            times.append((start, t))
            stm_lines.append(f"{file} {channel} s{channel} {start:.2f} {t:.2f} "
                             f"{' '.join(rng.choices(vocabulary, k=rng.randint(0, 7)))}\n")
        if not heard:
            continue
        low, high = sorted(rng.uniform(times[0][0] - 2, t + 2) for _ in range(2))
        words = [(round(rng.uniform(low, high), 2), rng.randint(5, 60) / 100) for _ in range(rng.randint(3, 30))]
        start, end = rng.choice(times)
        words += [(end, 0.2), (times[-1][1], 0.1), (round(start - 0.3, 2), 0.3)][:rng.randint(0, 3)]
        words += [(round(end - 0.1, 2), 0.2) for _, end in rng.sample(times, 2)]  # its midpoint on a segment's end
        words.sort()
        for i, (start, duration) in enumerate(words):
            inside = any(a < start and start + duration < b for a, b in times)
            if inside and 0 < i < len(words) - 1 and rng.random() < 0.3:  # an alternation inside a segment, which
                # -m keeps (after one it left out whole, sclite misreads), and neither first nor last of its channel
                # (sclite would read its marks' `*` times as 0 s)
                ctm_lines += [f"{file} {channel} * * <ALT_BEGIN>\n", f"{file} {channel} {start:.2f} {duration:.2f} "
                              f"{rng.choice(vocabulary)}\n", f"{file} {channel} * * <ALT>\n",
                              f"{file} {channel} * * <ALT_END>\n"]
            else:
                ctm_lines.append(f"{file} {channel} {start:.2f} {duration:.2f} {rng.choice(vocabulary)}\n")
    (folder / "ref.stm").write_text("".join(stm_lines))
    (folder / "hyp.ctm").write_text("".join(ctm_lines))


def sclite_skipped(folder: Path, *reduce: str) -> tuple[int, int]:
    """The segments and ctm words sclite -m's feedback says it skipped: each channel's last count, summed."""
    told = sclite_report(folder, "sum", "-f", "1", "-m", *reduce)
    found = re.findall(r"(\d+) of (\d+) Segments \((?:(\d+) skipped segs)?(?:, )?(?:(\d+) skipped words)?\)", told)
    last = [(int(segs or 0), int(words or 0)) for i, n, segs, words in found if i == n]
    return sum(s for s, _ in last), sum(w for _, w in last)


@needs_sclite
@pytest.mark.parametrize("seed", [1, 2, 8, 9])  # 8 and 9: words after a channel's last segment kept
def test_reduce_leaves_out_what_sclite_m_leaves_out(tmp_path, seed):
    """`--reduce ref`, `hyp`, and both, on a ctm of part of each channel: every utterance's id and counts are
    sclite -m's, and so are the segments and words its feedback says it skipped; and without it, sclite's."""
    partial_files(random.Random(seed), tmp_path)
    proc = score("--ref", str(tmp_path / "ref.stm"), "--hyp", str(tmp_path / "hyp.ctm"), "--normalize", "none",
                 "--out", str(tmp_path / "out"))
    assert proc.returncode == 0 and utterance_counts(tmp_path / "out") == sclite_counts(tmp_path)
    for reduce in (["ref"], ["hyp"], ["ref", "hyp"]):
        proc = score("--ref", str(tmp_path / "ref.stm"), "--hyp", str(tmp_path / "hyp.ctm"), "--normalize", "none",
                     *(f"--reduce={r}" for r in reduce), "--out", str(tmp_path / "out"))
        assert proc.returncode == 0, proc.stderr
        assert utterance_counts(tmp_path / "out") == sclite_counts(tmp_path, "-m", *reduce), reduce
        segments, words = sclite_skipped(tmp_path, *reduce)
        said = [stm.counted(segments, "stm segment")] * ("ref" in reduce) + \
            [stm.counted(words, "ctm word")] * ("hyp" in reduce)
        assert f"sclite -m {' '.join(reduce)} left out {' and '.join(said)}" in proc.stdout, proc.stdout


def test_reduce_says_what_sclite_scores_nowhere_and_where_it_would_misread(tmp_path):
    """sclite -m ref drops the first segment, which ends before the first word, and the last, which no word
    reaches, and the two words after the segment before it are in no segment (sclite's pralign, checked by hand:
    `d e x`, `g`); -m hyp leaves out an alternation before
    every segment, after which sclite's network reads the words up to the next <ALT_END> as an alternation with a
    way of none: here they are scored as written, and the line says so; and where a channel's words begin with an
    alternation, that sclite measures -m ref from its marks' `*` times."""
    (tmp_path / "ref.stm").write_text("f1 A s1 0 2 a b c\nf1 A s1 2 4 d e f\nf1 A s1 4 6 g h i\nf1 A s1 7 9 j k\n")
    (tmp_path / "hyp.ctm").write_text("f1 A 2.1 0.2 d\nf1 A 2.5 0.2 e\nf1 A 3.0 0.2 x\nf1 A 4.1 0.2 g\n"
                                      "f1 A 6.2 0.2 y\nf1 A 6.5 0.2 z\n")
    (tmp_path / "early.ctm").write_text("f1 A * * <ALT_BEGIN>\nf1 A 0.5 0.2 a\nf1 A * * <ALT>\n"
                                        "f1 A * * <ALT_END>\nf1 A 0.9 0.2 a\nf1 A 1.5 0.2 b\n")
    (tmp_path / "late.stm").write_text("f1 A s1 1 3 a b\n")
    out = str(tmp_path / "out")
    proc = score("--ref", str(tmp_path / "ref.stm"), "--hyp", str(tmp_path / "hyp.ctm"), "--reduce", "ref",
                 "--out", out)
    assert proc.returncode == 0 and "sclite -m ref left out 2 stm segments, and 2 ctm words after the last segment " \
        "it kept, which sclite scores in no segment" in proc.stdout, proc.stdout
    assert [(r["id"], r["reference"], r["hypothesis"]) for r in store.read_csv(tmp_path / "out" / "utterances.csv")] \
        == [("s1-000", "d e f", "d e x"), ("s1-001", "g h i", "g")]
    proc = score("--ref", str(tmp_path / "late.stm"), "--hyp", str(tmp_path / "early.ctm"), "--reduce", "hyp",
                 "--out", out)
    assert proc.returncode == 0 and "sclite -m hyp left out 1 ctm word; of them, 1 word of alternations left out " \
        "whole, after which sclite misreads" in proc.stdout, proc.stdout
    assert [r["hypothesis"] for r in store.read_csv(tmp_path / "out" / "utterances.csv")] == ["a b"]
    proc = score("--ref", str(tmp_path / "late.stm"), "--hyp", str(tmp_path / "early.ctm"), "--reduce", "ref",
                 "--out", out)
    assert proc.returncode == 0 and "in 1 channel the words begin or end with an alternation" in proc.stdout
    assert [r["hypothesis"] for r in store.read_csv(tmp_path / "out" / "utterances.csv")] == ["a b"]


def test_reduce_keeps_the_systems_it_compares_on_the_same_segments(tmp_path):
    """`--reduce ref` with two ctm files of different stretches would pair one's segments with the other's by id:
    refused, naming the segment; on the same stretch they are compared; and it is an stm's."""
    (tmp_path / "ref.stm").write_text("f1 A s1 0 2 a b c\nf1 A s1 2 4 d e f\nf1 A s1 4 6 g h i\n")
    (tmp_path / "late.ctm").write_text("f1 A 2.1 0.2 d\nf1 A 4.5 0.2 h\n")
    (tmp_path / "early.ctm").write_text("f1 A 0.1 0.2 a\nf1 A 2.5 0.2 e\n")
    (tmp_path / "other.ctm").write_text("f1 A 2.2 0.2 d\nf1 A 2.6 0.2 e\nf1 A 4.2 0.2 g\n")
    (tmp_path / "ref.trn").write_text("a b c (s1-000)\n")
    out = str(tmp_path / "out")
    proc = score("--ref", str(tmp_path / "ref.stm"), "--hyp", str(tmp_path / "late.ctm"), "--hyp",
                 str(tmp_path / "early.ctm"), "--reduce", "ref", "--out", out)
    assert proc.returncode == 2 and "late.ctm and " in proc.stderr and "(its line 1 is scored for one of them only)" \
        in proc.stderr, proc.stderr
    proc = score("--ref", str(tmp_path / "ref.stm"), "--hyp", str(tmp_path / "late.ctm"), "--hyp",
                 str(tmp_path / "other.ctm"), "--reduce", "ref", "--out", out)
    assert proc.returncode == 0 and "1 stm segment" in proc.stdout, proc.stdout
    assert [(r["asr"], r["id"], r["reference"]) for r in store.read_csv(tmp_path / "out" / "utterances.csv")] == \
        [(a, f"{a}_{i}", t) for a in ("late", "other") for i, t in (("s1-000", "d e f"), ("s1-001", "g h i"))]
    proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "ref.trn"), "--reduce", "hyp",
                 "--out", out)
    assert proc.returncode == 2 and "ref.trn is no .stm file" in proc.stderr


def test_the_nce_needs_every_word_of_the_ctm_to_have_a_confidence_and_a_number(tmp_path):
    (tmp_path / "ref.stm").write_text(REFERENCE)
    (tmp_path / "some.ctm").write_text(HEARD.replace(" the\n", " the 0.5\n"))
    (tmp_path / "none.ctm").write_text(HEARD)
    (tmp_path / "bad.ctm").write_text(HEARD.replace(" hat\n", " hat high\n"))
    out = tmp_path / "out"
    proc = score("--ref", str(tmp_path / "ref.stm"), "--hyp", str(tmp_path / "some.ctm"), "--out", str(out))
    assert proc.returncode == 0 and not (out / "confidence.csv").exists()
    assert "1 word without a confidence among words with one" not in proc.stdout
    assert "8 words without a confidence among words with one; no NCE" in proc.stdout, proc.stdout
    proc = score("--ref", str(tmp_path / "ref.stm"), "--hyp", str(tmp_path / "none.ctm"), "--outputs",
                 "confidence.csv", "--out", str(out))
    assert proc.returncode == 2 and "these hypotheses have none" in proc.stderr
    proc = score("--ref", str(tmp_path / "ref.stm"), "--hyp", str(tmp_path / "bad.ctm"), "--out", str(out))
    assert proc.returncode == 2 and "line 3: its sixth field 'high' is no confidence" in proc.stderr, proc.stderr
    (tmp_path / "numbers.stm").write_text("f1 A s1 0 5 it was twenty five cents\n")
    heard = "f1 A 0.1 0.1 it 0.9\nf1 A 0.5 0.1 was 0.8\nf1 A 1.1 0.1 twenty 0.7\nf1 A 1.5 0.1 five 0.6\n"
    (tmp_path / "numbers.ctm").write_text(heard)
    (tmp_path / "plain.ctm").write_text(re.sub(r" 0\.\d$", "", heard, flags=re.M))
    proc = score("--ref", str(tmp_path / "numbers.stm"), "--hyp", f"a={tmp_path / 'numbers.ctm'}", "--hyp",
                 f"b={tmp_path / 'plain.ctm'}", "--normalize", "whisper", "--out", str(out))  # `25`, of two words
    assert proc.returncode == 0 and not (out / "confidence.csv").exists()
    assert "a: no NCE: --normalize whisper rewrites the words of 1 utterance together" in proc.stdout, proc.stdout
    proc = score("--ref", str(tmp_path / "numbers.stm"), "--hyp", f"a={tmp_path / 'numbers.ctm'}", "--hyp",
                 f"b={tmp_path / 'plain.ctm'}", "--normalize", "sclite", "--out", str(out))
    assert proc.returncode == 0 and "b: NCE" not in proc.stdout
    assert [(r["asr"], r["speaker"], r["hyp_words"], r["correct"]) for r in store.read_csv(out / "confidence.csv")] \
        == [("a", "", "4", "4"), ("a", "s1", "4", "4")]


def test_stm_and_ctm_files_that_cannot_be_paired_are_refused_by_name(tmp_path):
    (tmp_path / "ref.stm").write_text(REFERENCE)
    (tmp_path / "hyp.trn").write_text("the cat (spk-1-000)\n")
    (tmp_path / "other.ctm").write_text(HEARD + "f9 A 0.1 0.2 the\n")
    (tmp_path / "bad.stm").write_text("f1 A spk1 zero 2.0 the cat\n")
    (tmp_path / "alt.ctm").write_text("f1 A * * <ALT_BEGIN>\nf1 A 0.1 0.2 the\n")
    (tmp_path / "nested.ctm").write_text("f1 A * * <ALT_BEGIN>\nf1 A 0.1 0.2 the\nf1 A * * <ALT_BEGIN>\n")
    (tmp_path / "mark.ctm").write_text("f1 A * * <ALT>\n")
    for ref, hyp, said in (("ref.stm", "hyp.trn", "every --hyp as a .ctm file"),
                           ("ref.stm", "other.ctm", "words of file 'f9' channel 'A'"),
                           ("bad.stm", "other.ctm", "line 1: its start 'zero' is not a number of seconds"),
                           ("ref.stm", "alt.ctm", "line 1: <ALT_BEGIN> without its <ALT_END>"),
                           ("ref.stm", "nested.ctm", "line 3: <ALT_BEGIN> inside an alternation"),
                           ("ref.stm", "mark.ctm", "line 1: <ALT> outside an alternation")):
        proc = score("--ref", str(tmp_path / ref), "--hyp", str(tmp_path / hyp), "--out", str(tmp_path / "out"))
        assert proc.returncode == 2 and said in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()
