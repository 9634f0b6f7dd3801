"""`score --ref ref.ctm --hyp hyp.ctm`: a ctm reference and a ctm hypothesis chopped into utterances and counted as
sclite chops and counts them (`sclite -r ref.ctm ctm -h hyp.ctm ctm`); SCTK master's chop against its own test's
expected output, in tests/test_sclite_files.py."""
import random
import subprocess
from pathlib import Path

import pytest

from pipeline.core import store
from tests.helpers import SCLITE, assert_nce_as_sclites, pralign_rows, sclite_nce, utterance_counts
from tests.test_score_cli import score

needs_sclite = pytest.mark.skipif(not Path(SCLITE).exists(), reason="Debian's sctk (sclite) is not installed")


def random_files(rng: random.Random, folder: Path, files: int, most: int, confident: bool = False) -> None:
    """A reference of `files` files of one or two channels, each of `most` / 2 to `most` words: gaps from none to 3
    s, words of no duration, fragments and hesitations written as ctm alternations (`*` times on their mark lines,
    as csrfilt.sh writes them); a hypothesis of the same words, some left out, changed, moved by a little or added.
    `confident`: each hypothesis word with a confidence."""
    vocabulary = "a b c d the king my lord".split()
    ref, hyp = [], []
    for file in (f"f{k}" for k in range(files)):
        for channel in rng.choice(["a", "ab", "ab"]):
            t, heard = 0.0, []
            for _ in range(rng.randint(most // 2, most)):
                t += rng.choice([0, 0.01, 0.05, 0.1, 0.3, 0.3, 1.5, 3])
                d, word, x = rng.randint(0, 40) / 100, rng.choice(vocabulary), rng.random()
                at = f"{file} {channel}"
                if x < 0.05:
                    ref += [f"{at} * * <ALT_BEGIN>\n", f"{at} {t:.2f} {d:.2f} {word}-\n", f"{at} * * <ALT>\n",
                            f"{at} * * <ALT_END>\n"]
                elif x < 0.1:
                    ref += [f"{at} * * <ALT_BEGIN>\n", f"{at} {t:.2f} {d:.2f} um\n", f"{at} * * <ALT>\n",
                            f"{at} {t:.2f} {d:.2f} uh\n", f"{at} * * <ALT_END>\n"]
                else:
                    ref.append(f"{at} {t:.2f} {d:.2f} {word}\n")
                y = rng.random()
                if y > 0.1:
                    start = max(0.0, t + rng.choice([0, 0, 0.01, -0.01, 0.05, -0.05, 0.2]))
                    duration = max(0.0, d + rng.choice([0, 0, 0.02, -0.02]))
                    heard.append((round(start, 2), round(duration, 2), word if y < 0.8 else rng.choice(vocabulary)))
                    if y > 0.95:
                        heard.append((round(start + duration, 2), 0.1, rng.choice(vocabulary)))
                t += d
            hyp += [f"{file} {channel} {s:.2f} {d:.2f} {w}" + (f" {rng.random():.3f}" if confident else "") + "\n"
                    for s, d, w in sorted(heard)]
    (folder / "ref.ctm").write_text("".join(ref))
    (folder / "hyp.ctm").write_text("".join(hyp))


def sclite_counts(folder: Path, *flags: str) -> dict[str, tuple[int, ...]]:
    told = subprocess.run([SCLITE, "-r", "ref.ctm", "ctm", "-h", "hyp.ctm", "ctm", *flags, "-o", "pralign",
                           "stdout"], cwd=folder, capture_output=True, text=True, check=True).stdout
    return {uid: counts for uid, (counts, _, _) in pralign_rows(told).items()}


@needs_sclite
@pytest.mark.parametrize("seed, files, most", [(1, 6, 1500), (2, 2, 5000)])
def test_random_ctm_files_are_chopped_and_counted_as_sclite_chops_and_counts_them(tmp_path, seed, files, most):
    """Every chunk's id and counts are Debian sclite's, through the reference's alternations, files longer than
    sclite's table (5,000 lines, filled again conversation by conversation) and, in the second, a conversation
    longer than it (the table grown). SCTK master's chop gives other counts on the same files."""
    random_files(random.Random(seed), tmp_path, files, most)
    assert len((tmp_path / "ref.ctm").read_text().splitlines()) > 6000
    theirs = sclite_counts(tmp_path)
    said = {}
    for chop in ("released", "master"):
        proc = score("--ref", str(tmp_path / "ref.ctm"), "--hyp", str(tmp_path / "hyp.ctm"), "--normalize", "none",
                     "--ctm-chop", chop, "--out", str(tmp_path / chop))
        assert proc.returncode == 0, proc.stderr
        said[chop] = proc.stdout
    assert len(theirs) > 30 and utterance_counts(tmp_path / "released") == theirs
    assert f"{len(theirs)} chunks of" in said["released"] and "as every released sclite chops" in said["released"]
    assert utterance_counts(tmp_path / "master") != theirs and "as SCTK master chops" in said["master"]
    assert "WER: each ctm channel chopped into utterances as every released sclite (2.4.12 and before) chops it: " \
           "comparable with" in said["released"]
    assert "not comparable with a released sclite's on the same files" in said["master"]
    assert "commit 82955db" in store.read_json(tmp_path / "master" / "summary.json")["comparable"]["line"]


GLM = """;; a GLM of the random files' words
* copy_no_hit = 'T'
* case_sensitive = 'F'
KING => KING OF / [ ] __ [ ]
UM => %HESITATION / [ ] __ [ ]
MY => MINE
;; INPUT_DEPENDENT_APPLICATION = "ref"
LORD => {LORD / LAWD} / [ ] __ [ ]
"""


@needs_sclite
@pytest.mark.parametrize("seed, flags", [(4, ()), (5, ("--optional-words", "--fragments"))])
def test_with_a_glm_the_chop_reads_both_files_as_csrfilt_writes_them(tmp_path, seed, flags):
    """csrfilt.sh -i ctm on each file (a word made two sharing its time, the reference's words made alternations,
    the hypothesis's confidences kept and its times rewritten to the millisecond), then sclite on what it wrote:
    every chunk's id and counts, and other counts than without the GLM, and the NCE."""
    random_files(random.Random(seed), tmp_path, 2, 800, confident=True)
    (tmp_path / "test.glm").write_text(GLM)
    env = {"PATH": f"{Path(SCLITE).parent}:/usr/bin:/bin"}
    for side in ("ref", "hyp"):
        written = subprocess.run([str(Path(SCLITE).parent / "csrfilt.sh"), "-i", "ctm", "-t", side, "-dh",
                                  "test.glm"], input=(tmp_path / f"{side}.ctm").read_bytes(), cwd=tmp_path, env=env,
                                 capture_output=True, check=True).stdout
        (tmp_path / f"{side}.filtered.ctm").write_bytes(written)
    assert b"<ALT_BEGIN>" in (tmp_path / "ref.filtered.ctm").read_bytes()
    told = {report: subprocess.run([SCLITE, "-r", "ref.filtered.ctm", "ctm", "-h", "hyp.filtered.ctm", "ctm",
                                    *(["-D", "-F"] if flags else []), "-o", report, "stdout"], cwd=tmp_path,
                                   capture_output=True, text=True, check=True).stdout for report in ("pralign", "sum")}
    theirs = {uid: counts for uid, (counts, _, _) in pralign_rows(told["pralign"]).items()}
    counted = {}
    for glm in (["--glm", str(tmp_path / "test.glm")], []):
        proc = score("--ref", str(tmp_path / "ref.ctm"), "--hyp", str(tmp_path / "hyp.ctm"), "--normalize",
                     "sclite", *flags, *glm, "--out", str(tmp_path / "out"))
        assert proc.returncode == 0, proc.stderr
        counted[bool(glm)] = utterance_counts(tmp_path / "out")
        if glm:
            assert "to each ctm file, -i ctm (hubscr.pl -l english's flags; hubscr.pl scores an stm reference " \
                   "alone), then sclite" in proc.stdout
            assert_nce_as_sclites(tmp_path / "out", sclite_nce(told["sum"]))
    assert len(theirs) > 10 and counted[True] == theirs != counted[False]


@needs_sclite
def test_chunks_aligned_by_time_count_as_sclite_t_counts_them(tmp_path):
    """--time-mediated (sclite -T): every chunk's counts are Debian sclite's with -T, through the reference's
    alternations, with and without -F, and other than those of the alignment by words alone."""
    random_files(random.Random(3), tmp_path, 3, 600)
    counted = {}
    for flags, theirs in (([], ["-T"]), (["--fragments"], ["-T", "-F"]), ([], [])):
        timed = ["--time-mediated"] * bool(theirs)
        proc = score("--ref", str(tmp_path / "ref.ctm"), "--hyp", str(tmp_path / "hyp.ctm"), "--normalize",
                     "sclite", *flags, *timed, "--out", str(tmp_path / "out"))
        assert proc.returncode == 0, proc.stderr
        counted[tuple(theirs)] = utterance_counts(tmp_path / "out")
        if theirs:
            assert counted[tuple(theirs)] == sclite_counts(tmp_path, *theirs) and len(counted[tuple(theirs)]) > 10
            assert "each chunk aligned by its words' times: comparable with their `sclite -r ref.ctm ctm -h " \
                   "hyp.ctm ctm -T`" in proc.stdout
    assert counted[("-T",)] != counted[()]


def test_a_way_of_no_word_across_a_word_at_0_s_is_the_one_departure_of_the_alignment_by_time(tmp_path):
    """A `@` starts and ends at 0 s, so against a hypothesis word that starts at 0 s its substitution weighs what
    passing it and inserting the word weigh; sclite -T takes the tie as a substitution, and counts the `@` a
    reference word ((#C #S #D #I) 1 1 0 0 here, checked by hand); here the word is an insertion, and the terminal
    says so."""
    (tmp_path / "ref.ctm").write_text("f1 A * * <ALT_BEGIN>\nf1 A 5.0 0.2 th-\nf1 A * * <ALT>\nf1 A * * <ALT_END>\n"
                                      "f1 A 5.5 0.3 the\n")
    (tmp_path / "hyp.ctm").write_text("f1 A 0.0 0.2 ah\nf1 A 5.5 0.3 the\n")
    proc = score("--ref", str(tmp_path / "ref.ctm"), "--hyp", str(tmp_path / "hyp.ctm"), "--normalize", "sclite",
                 "--time-mediated", "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert utterance_counts(tmp_path / "out") == {"f1-a-0000": (1, 0, 0, 1)}
    assert "in 1 utterance, aligned by time, an alternation's way of no word (`@`, which starts and ends at 0 s) " \
           "meets a hypothesis word that starts at 0 s" in proc.stdout


def test_time_mediated_alignment_needs_words_with_their_times(tmp_path):
    """Refused, naming the fix (exit 2): an stm reference, characters for units, a normalizer that makes other
    words than those the times are of."""
    (tmp_path / "ref.ctm").write_text("f1 A 0.0 0.5 twenty\nf1 A 0.6 0.4 one\nf1 A 1.2 0.4 cats\n")
    (tmp_path / "hyp.ctm").write_text("f1 A 0.0 0.5 twenty\nf1 A 0.6 0.4 one\n")
    (tmp_path / "ref.stm").write_text("f1 A s1 0.0 2.0 twenty one cats\n")
    for ref, flags, told in (("ref.stm", [], "--time-mediated: sclite -T aligns the words of a ctm reference and "
                                             "its ctm hypotheses by their times, and"),
                             ("ref.ctm", ["--language", "zh"], "not characters cut from them"),
                             ("ref.ctm", ["--normalize", "whisper"], "utterance f1-A-0000: the reference: the "
                              "normalizer makes 'twenty one cats' '21 cats', other words than those the times are "
                              "of; align by time with --normalize sclite or none")):
        proc = score("--ref", str(tmp_path / ref), "--hyp", str(tmp_path / "hyp.ctm"), "--time-mediated", *flags,
                     "--out", str(tmp_path / "out"))
        assert proc.returncode == 2 and told in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


@needs_sclite
def test_the_nce_of_the_hypothesis_confidences_is_sclites(tmp_path):
    """Each chunk's words keep their confidences: every speaker's NCE and the set's are sclite's sum report's."""
    random_files(random.Random(5), tmp_path, 3, 300, confident=True)
    proc = score("--ref", str(tmp_path / "ref.ctm"), "--hyp", str(tmp_path / "hyp.ctm"), "--normalize", "sclite",
                 "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    told = subprocess.run([SCLITE, "-r", "ref.ctm", "ctm", "-h", "hyp.ctm", "ctm", "-o", "sum", "stdout"],
                          cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert_nce_as_sclites(tmp_path / "out", sclite_nce(told))


REFERENCE = """f1 A 0.0 0.5 the
f1 A 0.6 0.4 cat
f1 B 0.0 0.5 good
f1 B 0.5 0.5 morning
f2 A 1.0 0.3 hello
"""


def test_a_channel_the_hypothesis_has_no_word_of_is_one_chunk_every_word_deleted(tmp_path):
    """Where sclite stops ("Hyp is missing second channel", a file out of sync), each such channel is one chunk,
    named as sclite names chunks, and the terminal says so."""
    (tmp_path / "ref.ctm").write_text(REFERENCE)
    (tmp_path / "hyp.ctm").write_text("f1 A 0.0 0.5 the\nf1 A 0.6 0.4 hat\n")
    proc = score("--ref", str(tmp_path / "ref.ctm"), "--hyp", str(tmp_path / "hyp.ctm"), "--normalize", "none",
                 "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert utterance_counts(tmp_path / "out") == {"f1-a-0000": (1, 1, 0, 0), "f1-b-0000": (0, 0, 2, 0),
                                                  "f2-a-0000": (0, 0, 1, 0)}
    assert "3 chunks of 3 channels scored, chopped as every released sclite chops a ctm reference; 2 channels of " \
           "the reference without a word of it, each scored as one chunk, every word deleted" in proc.stdout
    assert {r["speaker"] for r in store.read_csv(tmp_path / "out" / "speakers.csv")} == {"f1-A", "f1-B", "f2-A"}


@pytest.mark.parametrize("hyp, extra, told", [
    ("f1 A * * <ALT_BEGIN>\nf1 A 0.0 0.5 the\nf1 A * * <ALT>\nf1 A * * <ALT_END>\n", [],
     "line 1: an alternation, which sclite's chop of a ctm reference cuts through"),
    ("f3 A 0.0 0.5 the\n", [], "words of file 'f3', of which the reference"),
    ("f1 C 0.0 0.5 the\n", [], "words of file 'f1' channel 'C', of which the reference"),
    ("f2 A 1.0 0.3 hello\nf1 A 0.0 0.5 the\n", [], "its files are not in"),
    ("f1 A 0.0 0.5 the\nf1 B 0.0 0.5 good\nf1 A 0.6 0.4 cat\n", [],
     "the lines of file 'f1' channel 'A' are not together"),
    ("f1 A 0.0 0.5 the\n", ["--glm", "x.glm"], "line 1: an alternation, as the GLM writes it, which sclite's chop"),
    ("f1 A 0.0 0.5 the\n", ["--reduce", "ref"], "--reduce ref: sclite's -m cuts an stm reference"),
])
def test_what_cannot_be_chopped_as_sclite_chops_is_refused_by_name(tmp_path, hyp, extra, told):
    (tmp_path / "ref.ctm").write_text(REFERENCE)
    (tmp_path / "hyp.ctm").write_text(hyp)
    (tmp_path / "x.glm").write_text(';; a GLM\n* copy_no_hit = "T"\n;; INPUT_DEPENDENT_APPLICATION = "hyp"\n'
                                    "THE => {THE / DA} / [ ] __ [ ]\n")
    proc = score("--ref", str(tmp_path / "ref.ctm"), "--hyp", str(tmp_path / "hyp.ctm"), "--out",
                 str(tmp_path / "out"), *[str(tmp_path / a) if a.endswith(".glm") else a for a in extra])
    assert proc.returncode == 2 and told in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_a_ctm_reference_of_no_word_or_a_line_of_too_few_fields_is_refused_by_name(tmp_path):
    (tmp_path / "empty.ctm").write_text("; only a comment\n")
    (tmp_path / "short.ctm").write_text("f1 A 0.0 the\n")
    for ref, told in (("empty.ctm", "--ref {}: no word; a ctm line is `file channel start duration word"),
                      ("short.ctm", "--ref {}: line 1 has 4 fields; a ctm line is `file channel start duration")):
        proc = score("--ref", str(tmp_path / ref), "--hyp", str(tmp_path / "empty.ctm"), "--out", str(tmp_path / "o"))
        assert proc.returncode == 2 and told.format(tmp_path / ref) in proc.stderr, proc.stderr


def test_ctm_chop_is_for_a_ctm_reference(tmp_path):
    (tmp_path / "ref.txt").write_text("the cat\n")
    proc = score("--ref", str(tmp_path / "ref.txt"), "--hyp", str(tmp_path / "ref.txt"), "--ctm-chop", "master",
                 "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and "--ctm-chop master: sclite chops a ctm reference" in proc.stderr


def test_systems_chopped_otherwise_are_compared_by_speaker_alone(tmp_path):
    """Each hypothesis chops the reference by its own gaps, so two systems' chunks of one name can hold other
    reference words: they are then compared by speaker alone, as sc_stats pairs speakers, the terminal naming the
    line where their chunks part and what is left out; systems chopped alike are paired by utterance too."""
    words = [f"f{k} A {t:.2f} 0.2 w{t:.0f}\n" for k in (1, 2) for t in range(0, 120)]
    (tmp_path / "ref.ctm").write_text("".join(words))
    (tmp_path / "same.ctm").write_text("".join(words))
    (tmp_path / "alike.ctm").write_text("".join(words).replace("w7 ", "x7 "))
    (tmp_path / "long.ctm").write_text("".join(words[:45] + ["f1 A 45.00 11.0 long\n"] + words[56:]))  # no gap
    # of its meets the reference's between 45 and 56 s
    out = tmp_path / "out"
    proc = score("--ref", str(tmp_path / "ref.ctm"), "--hyp", str(tmp_path / "same.ctm"), "--hyp",
                 str(tmp_path / "long.ctm"), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "same.ctm and " in proc.stdout and "(one begins at its line 46 for one of them only)" in proc.stdout
    assert "compared by speaker alone (speaker_comparisons.csv" in proc.stdout
    assert f"paired comparisons by speaker: {out}/speaker_comparisons.csv" in proc.stdout
    assert not (out / "comparisons.csv").exists()
    (row,) = store.read_csv(out / "speaker_comparisons.csv")
    assert (row["a"], row["b"], row["speakers"], row["sign_b_worse"], row["sign_ties"]) == ("same", "long", "2", "1",
                                                                                            "1")
    proc = score("--ref", str(tmp_path / "ref.ctm"), "--hyp", str(tmp_path / "same.ctm"), "--hyp",
                 str(tmp_path / "alike.ctm"), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert [(r["asr"], r["id"]) for r in store.read_csv(out / "utterances.csv")] == \
        [(a, f"{a}_f{k}-A-{n:04d}") for a in ("same", "alike") for k in (1, 2) for n in range(3)]
    assert (out / "comparisons.csv").exists() and "by speaker alone" not in proc.stdout
