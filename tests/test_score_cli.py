import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.core import records, store
from pipeline.core.records import columns
from pipeline.scoring.utterances import ScoredUtterance
from pipeline.scoring import sclite
from tests.helpers import ROOT, SCLITE, pralign_rows, sclite_pralign


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


@pytest.mark.skipif(not Path(SCLITE).exists(), reason="needs Debian sctk")
def test_a_trn_files_comment_lines_are_read_past_as_sclite_reads_past_them(tmp_path):
    (tmp_path / "ref.trn").write_text(";; a header\n** information\nthe cat sat (spk_1)\n\nhello there (spk_2)\n")
    (tmp_path / "hyp.trn").write_text("the cat (spk_1)\n;; between\nhello (spk_2)\n")
    proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "hyp.trn"), "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    ours = {r["sentence_id"]: tuple(int(r[k]) for k in ("hits", "substitutions", "deletions", "insertions"))
            for r in store.read_csv(tmp_path / "o" / "utterances.csv")}
    assert ours == {uid: counts for uid, (counts, _, _) in sclite_pralign(tmp_path).items()} == {
        "spk_1": (2, 0, 1, 0), "spk_2": (1, 0, 1, 0)}


def test_ids_that_differ_in_case_pair_as_sclite_pairs_them_under_its_normalizer_alone(tmp_path):
    (tmp_path / "ref.trn").write_text("the cat sat (Spk_A1)\nhello there (spk_b2)\n")
    (tmp_path / "hyp.trn").write_text("the cat (spk_a1)\nhello (SPK_B2)\n")
    proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "hyp.trn"), "--normalize", "sclite",
                 "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    assert [(r["sentence_id"], r["errors"]) for r in store.read_csv(tmp_path / "o" / "utterances.csv")] == [
        ("Spk_A1", "1"), ("spk_b2", "1")]  # the reference's ids
    proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "hyp.trn"), "--normalize", "none",
                 "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "ids do not match: 2 only in" in proc.stderr  # sclite -s pairs none either
    (tmp_path / "twice.trn").write_text("the cat (spk_a1)\nthe dog (SPK_A1)\n")
    proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "twice.trn"), "--normalize", "sclite",
                 "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "the same utterance id twice (as sclite reads ids, A-Z and a-z alike)" \
        in proc.stderr


def test_kaldi_text_files_are_counted_as_kaldis_compute_wer_counts_them(tmp_path):
    """--format kaldi reads `id text` lines, paired by id, an id alone for nothing heard; --normalize kaldi counts
    each utterance's S, D and I as Kaldi does (kaldialign.edit_distance wraps the function compute-wer counts with),
    and so the corpus %WER; sclite's weights count some utterances otherwise. Read as plain files, such lines are
    named for what they seem to be."""
    import random

    import kaldialign

    rng = random.Random(4)
    vocabulary = "a b c d the of".split()
    pairs = []
    for k in range(300):
        ref = [rng.choice(vocabulary) for _ in range(rng.randint(1, 12))]
        hyp = [w if rng.random() > 0.3 else rng.choice(vocabulary) for w in ref if rng.random() > 0.1]
        pairs.append((f"1089-134686-{k:04d}", ref, hyp if k % 50 else []))
    (tmp_path / "text").write_text("".join(f"{u} {' '.join(r)}\n" for u, r, _ in pairs))
    (tmp_path / "hyp.txt").write_text("".join(f"{u} {' '.join(h)}".rstrip() + "\n" for u, _, h in reversed(pairs)))
    counted = {}
    for normalizer in ("kaldi", "none"):
        proc = score("--ref", str(tmp_path / "text"), "--hyp", str(tmp_path / "hyp.txt"), "--format", "kaldi",
                     "--normalize", normalizer, "--out", str(tmp_path / normalizer))
        assert proc.returncode == 0, proc.stderr
        counted[normalizer] = {r["sentence_id"]: tuple(int(r[k]) for k in ("substitutions", "deletions",
                                                                          "insertions"))
                               for r in store.read_csv(tmp_path / normalizer / "utterances.csv")}
    kaldi = {u: kaldialign.edit_distance(r, h) for u, r, h in pairs}
    assert counted["kaldi"] == {u: (e["sub"], e["del"], e["ins"]) for u, e in kaldi.items()}
    total = sum(e["total"] for e in kaldi.values()) / sum(e["ref_len"] for e in kaldi.values())
    assert store.read_csv(tmp_path / "kaldi" / "summary.csv")[0]["micro_wer"] == str(round(total, 4))
    assert sum(counted["kaldi"][u] != counted["none"][u] for u in kaldi) >= 2  # sclite's weights count otherwise
    assert "Kaldi's compute-wer" in (tmp_path / "kaldi" / "summary.json").read_text()
    proc = score("--ref", str(tmp_path / "text"), "--hyp", str(tmp_path / "hyp.txt"), "--out", str(tmp_path / "p"))
    assert proc.returncode == 0 and "Kaldi's `id text` lines? Plain files pair line by line" in proc.stdout
    (tmp_path / "short.txt").write_text("1089-134686-0000 a b\n1089-134686-0001 a\nextra-0001 a b\n")
    heard = sum(kaldialign.edit_distance(r, h)["total"] for (_, r, _), h in zip(pairs, (["a", "b"], ["a"])))
    for mode, n, errors in (("present", 2, heard), ("all", 300, heard + sum(len(r) for _, r, _ in pairs[2:]))):
        proc = score("--ref", str(tmp_path / "text"), "--hyp", str(tmp_path / "short.txt"), "--format", "kaldi",
                     "--kaldi-mode", mode, "--normalize", "kaldi", "--out", str(tmp_path / mode))
        assert proc.returncode == 0, proc.stderr
        assert "1 hypothesis line of no reference left out, as compute-wer leaves them out" in proc.stdout
        assert "298 references with no hypothesis" in proc.stdout
        summary = store.read_csv(tmp_path / mode / "summary.csv")[0]
        assert (int(summary["n_utterances"]), int(summary["errors"])) == (n, errors)
    (tmp_path / "g.glm").write_text(";; a GLM\n")
    for extra, said in ((["--hyp", str(tmp_path / "short.txt")], "298 references have no hypothesis line (e.g."),
                        (["--hyp", str(tmp_path / "hyp.txt"), "--glm", str(tmp_path / "g.glm")],
                         "--glm with --format kaldi"),
                        (["--hyp", str(tmp_path / "hyp.txt"), "--optional-words"], "Kaldi's compute-wer has neither")):
        proc = score("--ref", str(tmp_path / "text"), "--format", "kaldi", "--normalize", "kaldi", *extra, "--out",
                     str(tmp_path / "bad"))
        assert proc.returncode == 2 and said in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_mismatched_ids_and_counts_are_clear_errors(tmp_path):
    (tmp_path / "ref.trn").write_text("a b (x_1)\nc d (x_2)\n")
    (tmp_path / "hyp.trn").write_text("a b (x_1)\nc d (x_3)\n")
    proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "hyp.trn"), "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "ids do not match" in proc.stderr and "x_2" in proc.stderr
    assert "`(id)`" in proc.stderr  # the fix it names: an utterance heard as nothing is its id alone
    (tmp_path / "hyp.trn").write_text("a b (x_1)\n(x_2)\n")
    proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "hyp.trn"), "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    assert store.read_csv(tmp_path / "o" / "utterances.csv")[1]["deletions"] == "2"
    (tmp_path / "r.txt").write_text("a\nb\nc\n")
    (tmp_path / "h.txt").write_text("a\nb\n")
    proc = score("--ref", str(tmp_path / "r.txt"), "--hyp", str(tmp_path / "h.txt"), "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "has 3 lines" in proc.stderr and "h.txt has 2;" in proc.stderr


@pytest.mark.skipif(not Path(SCLITE).exists(), reason="needs Debian sctk")
def test_the_summary_gives_the_errors_by_kind_and_the_sentences_in_error_as_sclites_sum_report(tmp_path):
    """Its Sum/Avg line, references of no word among them."""
    import random

    rng = random.Random(3)
    vocabulary = "a b c d the king my lord".split()
    lines = [(f"spk_u{k:03d}", " ".join(rng.choices(vocabulary, k=rng.randint(1, 9))),
              " ".join(rng.choices(vocabulary, k=rng.randint(0, 9)))) for k in range(80)]
    lines += [("spk_same", "the king my lord", "the king my lord")]
    # references of no word: sclite counts each as a sentence, and what was written in it as insertions
    lines += [(f"spk_e{k}", "", " ".join(rng.choices(vocabulary, k=k % 3))) for k in range(6)]
    for name, column in (("ref", 1), ("hyp", 2)):
        (tmp_path / f"{name}.trn").write_text("".join(f"{line[column]} ({line[0]})\n" for line in lines))
    proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "hyp.trn"), "--normalize", "none",
                 "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    (ours,) = store.read_csv(tmp_path / "out" / "summary.csv")
    report = subprocess.run([SCLITE, "-r", "ref.trn", "trn", "-h", "hyp.trn", "trn", "-i", "spu_id", "-o", "sum",
                             "stdout"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    sentences, words, *shares = next(line for line in report.splitlines() if "Sum/Avg" in line).replace(
        "|", " ").split()[1:]
    assert (int(sentences), int(words)) == (int(ours["n_utterances"]), int(ours["ref_words"]))
    n, kinds = int(ours["ref_words"]), [int(ours[k]) for k in ("substitutions", "deletions", "insertions")]
    assert sum(kinds) == int(ours["errors"])
    expected = [100 * (n - kinds[0] - kinds[1]) / n, *(100 * k / n for k in kinds), 100 * sum(kinds) / n,
                100 * int(ours["sentence_errors"]) / int(sentences)]
    assert [float(x) for x in shares] == [round(x, 1) for x in expected]  # Corr Sub Del Ins Err S.Err


@pytest.mark.skipif(not Path(SCLITE).exists(), reason="needs Debian sctk")
def test_words_sclite_d_and_f_would_forgive_are_scored_as_words_and_counted_in_a_note(tmp_path):
    """`(uh)` and `th-` are words here, as in sclite without -D and -F; NIST's hubscr.pl passes both, and its counts
    then differ: the terminal says how many such words the references hold, for any number of workers."""
    lines = [("spk_a", "(uh) hello world th- there", "hello world the there"),
             ("spk_b", "so -ing (um) (th-) well-known", "so thing well-known"), ("spk_c", "a b", "a c")]
    for name, column in (("ref", 1), ("hyp", 2)):
        (tmp_path / f"{name}.trn").write_text("".join(f"{line[column]} ({line[0]})\n" for line in lines))

    def sclite_sum(*flags: str) -> list[str]:
        report = subprocess.run([SCLITE, "-r", "ref.trn", "trn", "-h", "hyp.trn", "trn", "-i", "spu_id", *flags,
                                 "-o", "sum", "stdout"], cwd=tmp_path, capture_output=True, text=True, check=True)
        return next(line for line in report.stdout.splitlines() if "Sum/Avg" in line).replace("|", " ").split()

    for workers in ("1", "2"):
        proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "hyp.trn"), "--normalize", "none",
                     "--workers", workers, "--out", str(tmp_path / "out"))
        assert proc.returncode == 0, proc.stderr
        assert ("reference: 3 words in parentheses (`(uh)`) and 3 fragments (`th-`), scored as words, as sclite "
                "scores them without -D and -F") in proc.stdout
    (ours,) = store.read_csv(tmp_path / "out" / "summary.csv")
    n = int(ours["ref_words"])
    kinds = [100 * int(ours[k]) / n for k in ("substitutions", "deletions", "insertions", "errors")]
    assert [float(x) for x in sclite_sum()[3:8]] == [round(x, 1) for x in [100 - kinds[0] - kinds[1], *kinds]]
    assert sclite_sum("-D", "-F")[3:8] != sclite_sum()[3:8]
    (tmp_path / "ref.trn").write_text("a b (spk_c)\n")
    (tmp_path / "hyp.trn").write_text("a c (spk_c)\n")
    proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "hyp.trn"), "--out", str(tmp_path / "o"))
    assert proc.returncode == 0 and "-D and -F" not in proc.stdout


@pytest.mark.skipif(not Path(SCLITE).exists(), reason="needs Debian sctk")
def test_optional_words_and_fragments_score_as_sclite_d_and_f(tmp_path):
    """--optional-words and --fragments are sclite's -D and -F: on 300 random references with words in parentheses,
    fragments and alternations, against hypotheses that write them too, every utterance's counts and alignment are
    sclite's with the same flags, and so is #Wrd (a hypothesis' `(uh)` over nothing adds a correct word); the
    alignment reads back from errors.csv as it was found, and two systems are compared from it."""
    import random

    rng = random.Random(7)
    said = [*"a b c the thing this th- -ing t- (uh) (um) uh um (th-) (-ing) -".split(), "{ uh / @ }", "{ the / a b }"]
    heard = "a b c the thing this th- thing uh um (uh) (um) -ing t- - th".split()
    refs = [" ".join(rng.choices(said, k=rng.randint(1, 9))) for _ in range(300)]
    hyps = [[" ".join(rng.choices(heard, k=rng.randint(0, 9))) for _ in refs] for _ in range(2)]
    for name, texts in (("ref", refs), ("hyp", hyps[0]), ("other", hyps[1])):
        (tmp_path / f"{name}.trn").write_text("".join(f"{t} (spk_u{k:03d})\n" for k, t in enumerate(texts)))
    for options, flags in ((["--optional-words"], ["-D"]), (["--fragments"], ["-F"]),
                           (["--optional-words", "--fragments"], ["-D", "-F"])):
        out = tmp_path / "".join(flags)
        proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "hyp.trn"), "--normalize", "sclite",
                     *options, "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        assert f"WER: scored as sclite {' '.join(flags)} scores" in proc.stdout
        theirs = sclite_pralign(tmp_path, *flags)
        assert pralign_rows((out / "pralign.txt").read_text()) == theirs, flags
        (summary,) = store.read_csv(out / "summary.csv")
        assert int(summary["ref_words"]) == sum(c + s + d for (c, s, d, _), _, _ in theirs.values())
    types = {r["type"] for r in store.read_csv(tmp_path / "-D-F" / "errors.csv")}
    assert {"optional_deletion", "optional_insertion"} <= types

    from pipeline.core import tables
    from pipeline.scoring import alternations, lenient, normalize
    from pipeline.scoring.align import from_codes
    from pipeline.scoring.files import EVENTS, SUMMARY_JSON, UTTERANCES
    from pipeline.scoring.utterances import Results

    scored = tables.load((UTTERANCES, EVENTS, SUMMARY_JSON), tmp_path / "-D-F", Results)
    normalizer = normalize.for_language("sclite", "en")
    for u, ref, hyp in zip(scored.utterances, refs, hyps[0]):  # as scored, read back from the events
        found = alternations.resolve(ref, hyp, normalizer, lenient.BOTH)
        assert scored.alignment(u) == from_codes(found.reference.split(), hyp.split(), found.codes), u.id
        assert scored.codes(u) == found.codes, u.id
    proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", f"one={tmp_path / 'hyp.trn'}", "--hyp",
                 f"two={tmp_path / 'other.trn'}", "--normalize", "sclite", "--optional-words", "--fragments",
                 "--out", str(tmp_path / "two"))
    assert proc.returncode == 0, proc.stderr
    assert len(store.read_csv(tmp_path / "two" / "comparisons.csv")) == 1


def test_optional_words_and_fragments_need_texts_that_keep_their_marks(tmp_path):
    """-D and -F read parentheses and hyphens: a normalizer that strips them, or a recipe's preset, is refused, and so
    is -c DH (--delete-hyphens) after one, naming the flag and what to give instead, before anything is scored."""
    (tmp_path / "ref.txt").write_text("(uh) th- hello\n")
    (tmp_path / "hyp.txt").write_text("the hello\n")
    files = ["--ref", str(tmp_path / "ref.txt"), "--hyp", str(tmp_path / "hyp.txt"), "--out", str(tmp_path / "out")]
    for extra, says in ((["--optional-words"], "--normalize basic: it strips the parentheses"),
                        (["--fragments", "--normalize", "sclite", "--preset", "seed-tts-eval"], "--preset"),
                        (["--delete-hyphens", "--language", "zh"], "--delete-hyphens with --normalize basic")):
        proc = score(*files, *extra)
        assert proc.returncode == 2 and says in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert not (tmp_path / "out").exists()
    proc = score(*files, "--normalize", "sclite", "--optional-words", "--fragments")
    assert proc.returncode == 0, proc.stderr
    (row,) = store.read_csv(tmp_path / "out" / "utterances.csv")
    assert (row["hits"], row["errors"], row["ref_words"]) == ("3", "0", "3")


@pytest.mark.skipif(not Path(SCLITE).exists(), reason="needs Debian sctk")
def test_the_sclite_normalizer_folds_case_as_sclite_does_and_none_keeps_it_as_its_s_flag(tmp_path):
    """sclite folds A-Z and no other letter (`Über` against `über` is a substitution, as is `İ` against `i`); each
    utterance's counts under `--normalize sclite` are sclite's by default, under `none` sclite's with -s."""
    import random

    rng = random.Random(11)
    vocabulary = "king King KING the The über Über ÉTÉ été İ i lord, Lord, O'er o'er".split()
    lines = [(f"spk_u{k:03d}", " ".join(rng.choices(vocabulary, k=rng.randint(1, 8))),
              " ".join(rng.choices(vocabulary, k=rng.randint(0, 8)))) for k in range(200)]
    for name, column in (("ref", 1), ("hyp", 2)):
        (tmp_path / f"{name}.trn").write_text("".join(f"{line[column]} ({line[0]})\n" for line in lines))

    def sclites(*flags: str) -> dict[str, tuple[int, ...]]:
        out = subprocess.run([SCLITE, "-r", "ref.trn", "trn", "-h", "hyp.trn", "trn", "-i", "spu_id", *flags, "-o",
                              "pralign", "stdout"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
        found, current = {}, None
        for line in out.splitlines():
            if line.startswith("id: ("):
                current = line[5:-1]
            elif line.startswith("Scores:"):
                found[current] = tuple(int(x) for x in line.split(")")[1].split())
        return found

    for normalizer, flags in (("sclite", ()), ("none", ("-s",))):
        proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "hyp.trn"), "--normalize",
                     normalizer, "--out", str(tmp_path / normalizer))
        assert proc.returncode == 0, proc.stderr
        ours = {r["sentence_id"].lower(): tuple(int(r[k]) for k in ("hits", "substitutions", "deletions",
                                                                      "insertions"))
                for r in store.read_csv(tmp_path / normalizer / "utterances.csv")}
        assert ours == sclites(*flags), normalizer
    folded = {r["sentence_id"]: r for r in store.read_csv(tmp_path / "sclite" / "utterances.csv")}
    kept = {r["sentence_id"]: r for r in store.read_csv(tmp_path / "none" / "utterances.csv")}
    assert sum(int(folded[u]["errors"]) < int(kept[u]["errors"]) for u in kept) > 50  # the case told apart


@pytest.mark.skipif(not Path(SCLITE).exists(), reason="needs Debian sctk")
def test_the_sclite_normalizer_reads_a_words_tags_escapes_and_closing_star_as_sclite_does(tmp_path):
    """sclite reads `word;tag1;tag2` as `word`, `a\\;s` as `a;s`, `lord*` as `lord` and `@` as nothing (word.c):
    each utterance's counts are sclite's, and the ref.trn and hyp.trn written, scored by sclite, give them again (a
    `;` kept in a word is written escaped)."""
    import random

    rng = random.Random(5)
    vocabulary = ["king", "king;NOUN", "KING;N;X", "a\\;s", "a\\;s;TAG1", "a;s", "a", "lord*", "lord", "*", "**",
                  "the;;T2", "the", "@"]
    lines = [(f"spk_u{k:03d}", " ".join(["now", *rng.choices(vocabulary, k=rng.randint(1, 8))]),
              " ".join(["now", *rng.choices(vocabulary, k=rng.randint(0, 8))]))  # `*` opens a trn comment line
             for k in range(200)]
    for name, column in (("ref", 1), ("hyp", 2)):
        (tmp_path / f"{name}.trn").write_text("".join(f"{line[column]} ({line[0]})\n" for line in lines))
    proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "hyp.trn"), "--normalize", "sclite",
                 "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    ours = {r["sentence_id"].lower(): tuple(int(r[k]) for k in ("hits", "substitutions", "deletions", "insertions"))
            for r in store.read_csv(tmp_path / "out" / "utterances.csv")}
    assert ours == {uid: counts for uid, (counts, _, _) in sclite_pralign(tmp_path).items()}
    assert ours == {uid: counts for uid, (counts, _, _) in sclite_pralign(tmp_path / "out").items()}
    assert sum(h for h, *_ in ours.values()) > 300


@pytest.mark.skipif(not Path(SCLITE).exists(), reason="needs Debian sctk")
def test_characters_are_cut_as_sclites_c_noascii_cuts_them(tmp_path):
    """In a language scored by characters, `sclite` and `none` keep a run of printable ASCII whole, punctuation and
    all (`GPT-4`, `3.5`, `(<hes>)`), as sclite's `-c NOASCII` does, with and without `-s`."""
    import random

    rng = random.Random(3)
    vocabulary = ["我", "們", "用", "寫詩", "GPT-4", "gpt", "Gpt-4", "3.5", "3", "(<hes>)", "。", "，", "ab.c", "x_y",
                  "(个)", "大概-", "-)", "Hello，世界"]
    lines = [(f"spk_u{k:03d}", "".join(rng.choices(vocabulary, k=rng.randint(1, 6))) + " " + rng.choice(vocabulary),
              " ".join(rng.choices(vocabulary, k=rng.randint(0, 6)))) for k in range(200)]
    for name, column in (("ref", 1), ("hyp", 2)):
        (tmp_path / f"{name}.trn").write_text("".join(f"{line[column]} ({line[0]})\n" for line in lines))
    for normalizer, flags in (("sclite", ()), ("none", ("-s",))):
        proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "hyp.trn"), "--language", "zh",
                     "--normalize", normalizer, "--out", str(tmp_path / normalizer))
        assert proc.returncode == 0, proc.stderr
        ours = {r["sentence_id"].lower(): tuple(int(r[k]) for k in ("hits", "substitutions", "deletions",
                                                                      "insertions"))
                for r in store.read_csv(tmp_path / normalizer / "utterances.csv")}
        theirs = sclite_pralign(tmp_path, "-e", "utf-8", "-c", "NOASCII", *flags)
        assert ours == {uid: counts for uid, (counts, _, _) in theirs.items()}, normalizer


@pytest.mark.skipif(not Path(SCLITE).exists(), reason="needs Debian sctk")
def test_characters_with_optional_words_fragments_and_no_hyphens_count_as_sclites(tmp_path):
    """hubscr.pl's Mandarin scoring, sclite -D -F -c NOASCII DH: in a language scored by characters, a word in
    parentheses is cut inside them and each unit stays optional (`(那个)`, `(嗯UH)`), a fragment of ASCII keeps its
    hyphen and is one, and --delete-hyphens takes a word's hyphens before it is cut (`GPT-4`, `TH-`, `(UH-HUH)`): on
    300 random pairs, with each of the eight ways of the three flags, every utterance's counts and alignment are
    sclite's (its gaps aside: gapped), and the line names sclite's flags; an alternation's ways are taken in sclite's
    order, a way whose first word is cut apart after the others, which decides its ties. A piece of a word cut
    apart that looks like a fragment, which sclite -F takes for none, is refused without --delete-hyphens, naming
    it."""
    import random

    rng = random.Random(11)
    said = ["我", "們", "寫詩", "GPT-4", "(嗯)", "(那个)", "(UH)", "(嗯UH)", "(UH-HUH)", "TH-", "-ING", "今-", "-",
            "TH", "THE", "UH-HUH", "{ 嗯 / @ }", "好", "好-", "-)", "{ TH- / 好 }", "{ 寫詩 / 好吗 / 我 }"]
    heard = ["我", "們", "寫", "詩", "GPT4", "GPT-4", "嗯", "那", "个", "UH", "UHHUH", "UH-HUH", "THE", "TH", "ING",
             "今", "好", "-", "(嗯)"]
    lines = [(f"spk_u{k:03d}", " ".join(rng.choices(said, k=rng.randint(1, 7))),
              " ".join(rng.choices(heard, k=rng.randint(0, 7)))) for k in range(300)]
    for name, column in (("ref", 1), ("hyp", 2)):
        (tmp_path / f"{name}.trn").write_text("".join(f"{line[column]} ({line[0]})\n" for line in lines))
    for optional in (False, True):
        for fragments in (False, True):
            for no_hyphens in (False, True):
                options = ["--optional-words"] * optional + ["--fragments"] * fragments + \
                    ["--delete-hyphens"] * no_hyphens
                flags = ["-D"] * optional + ["-F"] * fragments
                out = tmp_path / ("out" + "".join(options))
                proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "hyp.trn"), "--language",
                             "zh", "--normalize", "sclite", *options, "--out", str(out))
                assert proc.returncode == 0, proc.stderr
                theirs = sclite_pralign(tmp_path, "-e", "utf-8", *flags, "-c", "NOASCII", *["DH"] * no_hyphens)
                assert gapped(pralign_rows((out / "pralign.txt").read_text())) == gapped(theirs), options
                if optional or fragments:
                    assert f"CER: scored as sclite {' '.join(flags)} -c NOASCII{' DH' * no_hyphens} scores" \
                        in proc.stdout, proc.stdout
    proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "hyp.trn"), "--delete-hyphens",
                 "--out", str(tmp_path / "words"))
    assert proc.returncode == 2 and "en is scored by words" in proc.stderr
    (tmp_path / "mixed.trn").write_text("UH-好 我 (spk_u000)\n(TH-) 我 (spk_u001)\n")  # sclite -F: `UH-` a
    # piece, no fragment; with -D, `(TH-)` too
    (tmp_path / "one.trn").write_text("UH 我 (spk_u000)\nTHE 我 (spk_u001)\n")
    for optional in ([], ["--optional-words"]):
        for no_hyphens, told in (([], 2), (["--delete-hyphens"], 0)):
            proc = score("--ref", str(tmp_path / "mixed.trn"), "--hyp", str(tmp_path / "one.trn"), "--language",
                         "zh", "--normalize", "sclite", "--fragments", *optional, *no_hyphens, "--out",
                         str(tmp_path / "mixed"))
            assert proc.returncode == told, proc.stderr
    (tmp_path / "mixed.trn").write_text("(TH-) 我 (spk_u001)\n")
    (tmp_path / "one.trn").write_text("THE 我 (spk_u001)\n")
    assert "sclite cuts '(th-)' apart ('(th-)') and takes '(th-)', a piece of it, for no fragment" in score(
        "--ref", str(tmp_path / "mixed.trn"), "--hyp", str(tmp_path / "one.trn"), "--language", "zh", "--normalize",
        "sclite", "--fragments", "--optional-words", "--out", str(tmp_path / "mixed")).stderr
    (tmp_path / "mixed.trn").write_text("UH-好 我 (spk_u000)\n")
    (tmp_path / "one.trn").write_text("UH 我 (spk_u000)\n")
    assert "utterance spk_u000: sclite cuts 'uh-好' apart ('uh- 好') and takes 'uh-', a piece of it" in \
        score("--ref", str(tmp_path / "mixed.trn"), "--hyp", str(tmp_path / "one.trn"), "--language", "zh",
              "--normalize", "sclite", "--fragments", "--out", str(tmp_path / "mixed")).stderr


def gapped(rows: dict) -> dict:
    """pralign rows with each gap one `*`: sclite writes a gap as wide as its word's bytes, here as its characters."""
    def gaps(words: list[str]) -> list[str]:
        return ["*" if set(w) == {"*"} else w for w in words]
    return {uid: (counts, gaps(ref), gaps(hyp)) for uid, (counts, ref, hyp) in rows.items()}


@pytest.mark.skipif(not Path(SCLITE).exists(), reason="needs Debian sctk")
def test_each_speakers_counts_are_the_rows_of_sclites_sum_report(tmp_path):
    """speakers.csv: a row per speaker, named as sclite's -i spu_id names it (the id up to its first hyphen, else its
    first underscore), in the order speakers first appear, with sclite's counts (-o rsum); the Mean, S.D. and Median
    rows of its -o sum are those of the rows' percentages; a reference of no word is a sentence, what was written in
    it insertions, as sclite counts them."""
    import random
    import re
    import statistics

    rng = random.Random(5)
    vocabulary = "a b c d the king my lord".split()
    speakers = ["4077", "sw02001", "mix_a", "1089", "z"]  # written as 4077-…, sw02001_A_…, mix_a-…, 1089-…, z_…
    lines = []
    for k in range(120):
        who = rng.choice(speakers)
        uid = {"4077": f"4077-13754-{k:04d}", "sw02001": f"sw02001_A_{k:04d}", "mix_a": f"mix_a-{k:04d}",
               "1089": f"1089-{k:04d}", "z": f"z_{k:04d}"}[who]
        words = rng.randint(1, 9) if rng.random() > 0.1 else 0  # a reference of no word: insertions alone
        lines.append((uid, " ".join(rng.choices(vocabulary, k=words)),
                      " ".join(rng.choices(vocabulary, k=rng.randint(0, 9))), who))
    for name, column in (("ref", 1), ("hyp", 2)):
        (tmp_path / f"{name}.trn").write_text("".join(f"{line[column]} ({line[0]})\n" for line in lines))
    proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "hyp.trn"), "--normalize", "none",
                 "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    ours = store.read_csv(tmp_path / "out" / "speakers.csv")
    assert [r["speaker"] for r in ours] == list(dict.fromkeys(who for *_, who in lines))
    (summary,) = store.read_csv(tmp_path / "out" / "summary.csv")
    for column in ("n_utterances", "ref_words", "substitutions", "deletions", "insertions", "sentence_errors"):
        assert sum(int(r[column]) for r in ours) == int(summary[column])

    def report(kind: str) -> dict[str, list[str]]:
        text = subprocess.run([SCLITE, "-r", "ref.trn", "trn", "-h", "hyp.trn", "trn", "-i", "spu_id", "-o", kind,
                               "stdout"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
        rows = (line.replace("|", " ").split() for line in text.splitlines() if line.count("|") == 4)
        return {cells[0]: cells[1:] for cells in rows if cells and cells[0] != "SPKR"}

    counts = report("rsum")  # # Snt, # Wrd, Corr, Sub, Del, Ins, Err, S.Err of each speaker
    for r in ours:
        assert [int(x) for x in counts[r["speaker"]]] == [int(r[c]) for c in (
            "n_utterances", "ref_words", "hits", "substitutions", "deletions", "insertions", "errors",
            "sentence_errors")], r["speaker"]
    shares = {r["speaker"]: [100 * int(r[c]) / int(r["ref_words"]) for c in (
        "hits", "substitutions", "deletions", "insertions", "errors")] for r in ours}
    by_column = list(zip(*shares.values()))
    sentences = [100 * int(r["sentence_errors"]) / int(r["n_utterances"]) for r in ours]
    pct = report("sum")
    for row, figure in (("Mean", statistics.mean), ("S.D.", statistics.stdev), ("Median", statistics.median)):
        expected = [figure(column) for column in by_column] + [figure(sentences)]
        assert len(pct[row]) == 2 + len(expected)
        assert all(abs(float(x) - e) <= 0.05 + 1e-9 for x, e in zip(pct[row][2:], expected)), (row, pct[row])
    # the terminal's line: the speakers' WER (sclite's Err column) across them, and the speaker with the highest
    told = re.search(r"WER by speaker \(5\): mean ([\d.]+), S.D. ([\d.]+), median ([\d.]+); highest (\S+) ([\d.]+)",
                     proc.stdout)
    for row, said in zip(("Mean", "S.D.", "Median"), told.groups()[:3]):
        assert abs(float(said) - float(pct[row][6]) / 100) <= 0.0006, (row, said, pct[row])
    worst = max(ours, key=lambda r: int(r["errors"]) / int(r["ref_words"]))
    assert told.group(4) == worst["speaker"] and float(told.group(5)) == round(float(worst["wer"]), 3)


def test_speakers_come_from_the_users_ids_only(tmp_path):
    """An id with neither mark is its own speaker where other ids name theirs; each system has its own rows; plain
    files, and trn files none of whose ids has a mark, name no speakers, so no speakers.csv, and asking for one is
    refused; a row whose reference is empty after
    normalization is a sentence of its speaker, what was written in it insertions, as in summary.csv."""
    (tmp_path / "ref.trn").write_text("the king (ann-1)\nis dead (plain)\n[laughs] (ann-2)\nlong live (ann_3)\n")
    (tmp_path / "a.trn").write_text("the king (ann-1)\nis dead (plain)\nha (ann-2)\nlong (ann_3)\n")
    (tmp_path / "b.trn").write_text("a king (ann-1)\nis (plain)\n(ann-2)\nlong live (ann_3)\n")
    out = tmp_path / "out"
    proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "a.trn"), "--hyp",
                 str(tmp_path / "b.trn"), "--normalize", "whisper", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    rows = [(r["asr"], r["speaker"], r["n_utterances"], r["ref_words"], r["errors"], r["wer"])
            for r in store.read_csv(out / "speakers.csv")]
    assert rows == [("a", "ann", "3", "4", "2", "0.5"), ("a", "plain", "1", "2", "0", "0.0"),  # "ha": an insertion
                    ("b", "ann", "3", "4", "1", "0.25"), ("b", "plain", "1", "2", "1", "0.5")]
    (by_speaker,) = store.read_csv(out / "speaker_comparisons.csv")  # a test that cannot fail says so
    assert by_speaker["note"] == "with 2 speakers neither test's p can go below 0.5: no difference could be found"
    assert by_speaker["note"] in proc.stdout
    (tmp_path / "r.txt").write_text("the king\nis dead\n")
    (tmp_path / "h.txt").write_text("the king\nis\n")
    proc = score("--ref", str(tmp_path / "r.txt"), "--hyp", str(tmp_path / "h.txt"), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert not (out / "speakers.csv").exists()  # the trn scoring's, removed: it is not of these files
    assert not (out / "speaker_comparisons.csv").exists()
    proc = score("--ref", str(tmp_path / "r.txt"), "--hyp", str(tmp_path / "h.txt"), "--outputs", "speakers.csv",
                 "--out", str(tmp_path / "o2"))
    assert proc.returncode == 2 and "speakers.csv" in proc.stderr and "trn" in proc.stderr
    # trn ids that name no speaker (no - or _ in any): each would be a speaker of one sentence, so none are made
    (tmp_path / "r.trn").write_text("the king (1)\nis dead (2)\n")
    (tmp_path / "h.trn").write_text("the king (1)\nis (2)\n")
    proc = score("--ref", str(tmp_path / "r.trn"), "--hyp", str(tmp_path / "h.trn"), "--hyp",
                 f"same={tmp_path / 'r.trn'}", "--out", str(out))
    assert proc.returncode == 0 and not (out / "speakers.csv").exists(), proc.stderr
    assert not (out / "speaker_comparisons.csv").exists() and "by speaker" not in proc.stdout


@pytest.mark.skipif(not Path(SCLITE).with_name("sc_stats").exists(), reason="needs Debian sctk")
def test_two_systems_speakers_are_compared_as_sc_stats_compares_them(tmp_path):
    """sc_stats' sign and Wilcoxon tests take sclite's speakers as blocks: speaker_comparisons.csv has its sign
    counts and p, its rank sums and Z on twelve speakers of three to seven sentences (no two of a speaker's WERs
    equal, where sc_stats ranks a zero difference its own way: docs/statistics.md), and the terminal says what the
    tests found."""
    import random
    import re

    from tests.test_paired import VOCAB, noisy

    for seed in range(50):  # the first corpus without a tie between a speaker's two WERs
        rng = random.Random(seed)
        rows = []
        for s in range(12):
            pa, pb = rng.choice([0.0, 0.05, 0.1, 0.2]), rng.choice([0.05, 0.15, 0.3])
            for u in range(rng.randint(3, 7)):
                ref = [rng.choice(VOCAB) for _ in range(rng.randint(2, 12))]
                rows.append((f"sp{s:02d}-u{u}", ref, noisy(rng, ref, pa), noisy(rng, ref, pb)))
        for name, column in (("ref", 1), ("A", 2), ("B", 3)):
            (tmp_path / f"{name}.trn").write_text("".join(f"{' '.join(r[column])} ({r[0]})\n" for r in rows))
        proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "A.trn"), "--hyp",
                     str(tmp_path / "B.trn"), "--normalize", "none", "--out", str(tmp_path / "out"))
        assert proc.returncode == 0, proc.stderr
        (ours,) = store.read_csv(tmp_path / "out" / "speaker_comparisons.csv")
        if ours["sign_ties"] == "0":
            break
    for name in ("A", "B"):
        subprocess.run([SCLITE, "-r", "ref.trn", "trn", "-h", f"{name}.trn", "trn", "-i", "spu_id", "-o", "sgml",
                        "-n", name], cwd=tmp_path, check=True, capture_output=True)
    subprocess.run(f"cat A.sgml B.sgml | {Path(SCLITE).with_name('sc_stats')} -p -t sign wilc -v -n out",
                   shell=True, cwd=tmp_path, check=True, capture_output=True)
    sign, wilc = ((tmp_path / f"out.stats.{t}").read_text() for t in ("sign", "wilc"))
    assert re.search(r"Percentages for Systems B\.trn and A\.trn", sign)  # B − A, as the columns are
    assert (ours["a"], ours["b"], ours["speakers"]) == ("A", "B", "12")
    assert [int(x) for x in re.findall(r"= N\([+\-0]\) = +(\d+)", sign)] == [
        int(ours[c]) for c in ("sign_b_worse", "sign_b_better", "sign_ties")]
    assert float(re.search(r"the probability of\s+it occurring is ([\d.]+)", sign).group(1)) == round(
        float(ours["sign_p"]), 3)
    table = dict(re.findall(r"^\s+(sp\d\d)\s+([\d.]+)\s+[\d.]+\s+[+\-0]\s*$", sign, re.M))
    wer = {r["speaker"]: float(r["wer"]) for r in store.read_csv(tmp_path / "out" / "speakers.csv") if r["asr"] == "B"}
    assert {s: round(100 * w, 2) for s, w in wer.items()} == {s: float(x) for s, x in table.items()}
    sums = {sign: float(x) for sign, x in re.findall(r"Sum of +\d+ (\w+) ranks = ([\d.]+)", wilc)}
    assert (float(ours["wilcoxon_w_plus"]), float(ours["wilcoxon_w_minus"])) == (sums["positive"], sums["negative"])
    assert round(float(ours["wilcoxon_z"]), 2) == float(re.search(r"Z statistic = ([-\d.]+)", wilc).group(1))
    assert f"by speaker (12): B worse than A for {ours['sign_b_worse']}" in proc.stdout
    assert "speaker_comparisons.csv" in proc.stdout


def test_several_hypotheses_are_systems_compared_sentence_by_sentence(tmp_path):
    """Two engines' transcripts of one test set, as an ASR evaluator has them: each a system of its own, and the
    pair tested as a run's compare stage tests two engines (sclite's sc_stats tests: tests/test_paired.py)."""
    from scipy.stats import binomtest

    words = "the king rode north at dawn with his men".split()
    ids = [f"spk_{k:02d}" for k in range(12)]
    refs = [" ".join(words[k % 3:k % 3 + 6]) for k in range(12)]
    a = [r if k != 5 else "a " + r.split(" ", 1)[1] for k, r in enumerate(refs)]  # a first word wrong in one
    b = [r.rsplit(" ", 1)[0] + " then" if k < 10 else r for k, r in enumerate(refs)]  # a last word wrong in 10
    for name, texts in (("ref", refs), ("v1", a), ("v2", b)):
        (tmp_path / f"{name}.trn").write_text("".join(f"{t} ({u})\n" for u, t in zip(ids, texts)))
    out = tmp_path / "out"
    proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "v1.trn"),
                 "--hyp", f"newer={tmp_path / 'v2.trn'}", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    rows = store.read_csv(out / "utterances.csv")
    assert [r["asr"] for r in rows] == ["v1"] * 12 + ["newer"] * 12 and len({r["id"] for r in rows}) == 24
    errors = {(r["asr"], r["sentence_id"]): int(r["errors"]) for r in rows}
    worse = sum(errors["newer", u] > errors["v1", u] for u in ids)
    better = sum(errors["newer", u] < errors["v1", u] for u in ids)
    ties = 12 - worse - better  # split between the sides, as sc_stats splits them (the odd one to B's better side)
    assert (worse, better, ties) == (9, 0, 3)
    (c,) = store.read_csv(out / "comparisons.csv")
    assert (c["a"], c["b"]) == ("- | v1 | -", "- | newer | -") and c["sentences"] == "12"
    assert (int(c["sign_b_worse"]), int(c["sign_b_better"]), int(c["sign_ties"])) == (worse, better, ties)
    assert float(c["sign_p"]) == float(f"{binomtest(better + ties - ties // 2, 12).pvalue:.4g}")
    micro = {s["asr"]: float(s["micro_wer"]) for s in store.read_csv(out / "summary.csv")}
    assert abs(float(c["delta_wer"]) - (micro["newer"] - micro["v1"])) < 1e-4
    assert float(c["mapsswe_p"]) < 0.05 and "newer has more errors than v1" in proc.stdout
    # scored again with one system, the folder keeps no comparison of the earlier two
    assert score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "v1.trn"), "--out",
                 str(out)).returncode == 0
    assert not (out / "comparisons.csv").exists()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "v1.trn").write_text((tmp_path / "v2.trn").read_text())
    for flags, says in ((["--hyp", str(tmp_path / "other" / "v1.trn")], "NAME=PATH"),
                        (["--hyp", str(tmp_path / "v2.trn"), "--outputs", "pralign.txt"], "errors.csv")):
        proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "v1.trn"), *flags,
                     "--out", str(tmp_path / "refused"))
        assert proc.returncode == 2 and says in proc.stderr and not (tmp_path / "refused").exists(), proc.stderr


def test_words_written_where_nothing_was_said_count_in_the_pooled_comparison_not_in_the_per_sentence_tests(tmp_path):
    """Two sentences of no word, where the newer system writes words: ΔWER and MAPSSWE count them, as sclite and
    sc_stats do; the sign and Wilcoxon tests are over per-sentence WER, which they have none of."""
    words = "the king rode north at dawn with his men".split()
    ids = [f"spk_{k:02d}" for k in range(14)]
    refs = [" ".join(words[k % 3:k % 3 + 6]) for k in range(12)] + ["", ""]
    b = [r.rsplit(" ", 1)[0] + " then" if k < 4 else r for k, r in enumerate(refs[:12])] + ["uh huh", "yes"]
    for name, texts in (("ref", refs), ("v1", refs), ("v2", b)):
        (tmp_path / f"{name}.trn").write_text("".join(f"{t} ({u})\n" for u, t in zip(ids, texts)))
    out = tmp_path / "out"
    proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "v1.trn"), "--hyp",
                 str(tmp_path / "v2.trn"), "--normalize", "none", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    micro = {s["asr"]: s["micro_wer"] for s in store.read_csv(out / "summary.csv")}
    assert micro == {"v1": "0.0", "v2": str(round((4 + 3) / 72, 4))}  # 4 substitutions, 3 words said of nothing
    (c,) = store.read_csv(out / "comparisons.csv")
    assert c["sentences"] == "14" and float(c["delta_wer"]) == round(7 / 72, 4)
    assert int(c["mapsswe_segments"]) == 4 + 2
    assert (int(c["sign_b_worse"]), int(c["sign_b_better"]), int(c["sign_ties"])) == (4, 0, 8)


def test_score_loads_no_model():
    code = ("import sys; from pipeline.cli import main; import tempfile, pathlib; d = pathlib.Path(tempfile.mkdtemp()); "
            "(d/'r').write_text('a b\\n'); (d/'h').write_text('a c\\n'); "
            "main(['score', '--ref', str(d/'r'), '--hyp', str(d/'h'), '--out', str(d/'o')]); "
            "print(sorted(m for m in ('torch', 'whisper', 'faster_whisper', 'piper', 'ctranslate2') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


REFS = ["I am very tired today.", "", "the king's crown, well-known", "a b c", "To be or not to be",
        "我们用GPT-4写诗。", "這個問題很簡單", "人體內存在很多微生物，", "Hello，世界", "one two"]
HYPS = ["I am tired today", "something said", "", "a b c", "to be to be to be to be to be",
        "我们用gpt写诗", "这个问题很简单", "人体内存在很多微生物", "hello 世界 世界 世界 世界", "one\u00a0two"]


def test_score_streams_byte_for_byte_what_evaluate_and_write_give(tmp_path):
    """`score` writes each row as it is scored and keeps only the groups' tallies (files.stream); its nine files are
    those the pipeline's path (every row held, then written) gives, for each normalizer and unit, with rows that
    are empty, perfect, looping or traditional Chinese, and with no rows at all or no errors."""
    from pipeline.scoring.config import ScoreConfig
    from pipeline.scoring.evaluate import evaluate
    from pipeline.scoring.files import FILES, stream, write
    from pipeline.scoring.utterances import Pair

    pairs = [Pair(sentence_id=f"line{k:05d}", reference=r, hypothesis=h) for k, (r, h) in enumerate(zip(REFS, HYPS))]
    cases = [(pairs, n, lang) for n in ("basic", "none", "whisper", "seed-tts-eval") for lang in ("en", "zh")]
    cases += [([], "basic", "en"), (pairs[3:4], "basic", "en")]  # no rows; no error event (errors.csv a header)
    for k, (rows, normalizer, lang) in enumerate(cases):
        options = ScoreConfig(normalize=normalizer, bootstrap=50)
        write(evaluate(rows, options, language=lang), tmp_path / f"held{k}")
        results, n = stream(iter(rows), options, language=lang, out_dir=tmp_path / f"streamed{k}")
        assert n == len(rows)
        for f in FILES:
            assert (tmp_path / f"held{k}" / f.name).read_bytes() == (tmp_path / f"streamed{k}" / f.name).read_bytes(), \
                (normalizer, lang, f.name)


def test_a_streamed_score_holds_no_row(tmp_path):
    """Ten times the rows take about the memory of one tenth: what stream holds beyond a chunk of rows being scored
    is each group's tally, some bytes a row."""
    import random
    import tracemalloc

    from pipeline.scoring.config import ScoreConfig
    from pipeline.scoring.evaluate import prepare
    from pipeline.scoring.files import stream
    from pipeline.scoring.utterances import Pair

    rng = random.Random(5)
    words = "the a king crown to be or not question".split()

    def pairs(n):
        for k in range(n):
            ref = [rng.choice(words) for _ in range(12)]
            yield Pair(sentence_id=f"line{k:05d}", reference=" ".join(ref),
                       hypothesis=" ".join(w if rng.random() > 0.2 else rng.choice(words) for w in ref))

    prepare("basic", "en")  # what scoring loads once (the compiled aligner), loaded before memory is traced
    peaks = []
    for n in (2_000, 20_000):
        tracemalloc.start()
        stream(pairs(n), ScoreConfig(bootstrap=0), out_dir=tmp_path / str(n), workers=1)  # all scored here
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[1] < 1.5 * peaks[0], peaks  # held, 18,000 more rows would take tens of MB more


def test_lines_are_read_a_block_at_a_time_as_splitlines_splits_them(tmp_path):
    from pipeline.io.inputs import text_lines

    text = "a\r\nb\rc\nd\x0be\x0cf\x1cg\x1dh\x1ei\x85j\u2028k\u2029l\r\n\r\n\rm\n\n"
    for content in (text, text + "last", "\ufeff" + text, "", "\r", "one line"):
        (tmp_path / "t.txt").write_text(content, encoding="utf-8", newline="")
        for block in (1, 2, 3, 5, 1 << 16):
            assert list(text_lines(tmp_path / "t.txt", "--ref", block)) == \
                content.removeprefix("\ufeff").splitlines(keepends=True), (content, block)


def test_a_bad_byte_far_into_a_file_is_refused_before_any_row_is_written(tmp_path):
    good = "".join(f"line {k}\n" for k in range(100_000)).encode()
    (tmp_path / "ref.txt").write_bytes(good + b"bad \xff byte\n")
    (tmp_path / "hyp.txt").write_bytes(good + b"fine\n")
    proc = score("--ref", str(tmp_path / "ref.txt"), "--hyp", str(tmp_path / "hyp.txt"), "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "line 100001: not UTF-8" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "o").exists()


def test_a_row_writer_refuses_a_value_it_has_no_column_for(tmp_path):
    import pytest

    from pipeline.core.records import RowWriter, write_csv
    from pipeline.scoring.utterances import ErrorEvent

    event = ErrorEvent(id="u", type="deletion", reference_word="a", hypothesis_word="", position=0)
    with RowWriter(tmp_path / "e.csv", ErrorEvent, lm=False) as rows:
        rows.write(event)
        with pytest.raises(ValueError, match="does not write"):
            rows.write(ErrorEvent(id="u", type="deletion", reference_word="a", hypothesis_word="", position=0,
                                  surprisal=3.5))
    write_csv(tmp_path / "held.csv", ErrorEvent, [event])
    assert (tmp_path / "e.csv").read_bytes() == (tmp_path / "held.csv").read_bytes()


def test_outputs_writes_only_the_files_asked_for_each_as_a_full_scoring_writes_it(tmp_path):
    """--outputs picks files as sclite's -o picks reports: those asked for (and the summaries) are byte for byte a
    full scoring's, an earlier scoring's others are removed from --out, and a name it does not know is refused."""
    (tmp_path / "ref.txt").write_text("the king is dead\nlong live the king\nto be or not to be\n\n")
    (tmp_path / "hyp.txt").write_text("the thing is dead\nlong live king the king\nto be or not\nhello\n")
    files = ("--ref", str(tmp_path / "ref.txt"), "--hyp", str(tmp_path / "hyp.txt"))
    assert score(*files, "--out", str(tmp_path / "full")).returncode == 0
    full = {p.name: p.read_bytes() for p in (tmp_path / "full").iterdir()}
    assert len(full) == 9
    out = tmp_path / "part"
    assert score(*files, "--out", str(out)).returncode == 0  # an earlier scoring, with every file
    proc = score(*files, "--outputs", "utterances.csv,pralign.txt", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == {
        name: full[name] for name in ("utterances.csv", "pralign.txt", "summary.csv", "summary.json")}
    proc = score(*files, "--outputs", "", "--out", str(tmp_path / "figures"))
    assert proc.returncode == 0 and sorted(p.name for p in (tmp_path / "figures").iterdir()) == [
        "summary.csv", "summary.json"]
    assert (tmp_path / "figures" / "summary.json").read_bytes() == full["summary.json"]
    proc = score(*files, "--outputs", "utterances.csv,words.csv", "--out", str(tmp_path / "bad"))
    assert proc.returncode == 2 and "'words.csv'" in proc.stderr and "pralign.txt" in proc.stderr
    assert not (tmp_path / "bad").exists()


def test_worker_processes_write_the_bytes_one_process_writes(tmp_path):
    """`score` spreads its chunks of pairs over worker processes (pipeline/exec/fanout.py); each pair is scored
    alone and the chunks' tallies are joined in order, so one, two or three processes write the nine files the
    pipeline's path writes, bootstrap intervals included, with the compiled aligner and with jiwer's."""
    from pipeline.scoring.config import ScoreConfig
    from pipeline.scoring.evaluate import CHUNK_CHARS, evaluate
    from pipeline.scoring.files import FILES, SPEAKERS, stream, write
    from pipeline.scoring.speakers import Speakers
    from pipeline.scoring.utterances import Pair

    pairs = [Pair(sentence_id=f"s{k % 7}-{k:05d}", reference=r, hypothesis=h)
             for k, (r, h) in enumerate(zip(REFS * 400, HYPS * 400))]
    assert sum(len(p.reference) + len(p.hypothesis) + 1 for p in pairs) > 4 * CHUNK_CHARS  # chunks for each worker
    for normalizer, lang in (("basic", "en"), ("seed-tts-eval", "zh")):
        options = ScoreConfig(normalize=normalizer, bootstrap=50)
        held = tmp_path / f"{normalizer}-held"
        results = evaluate(pairs, options, language=lang)
        write(results, held)
        speakers = Speakers()
        for u in results.utterances:
            speakers.add(u)
        records.write_csv(held / SPEAKERS.name, SPEAKERS.record, speakers.rows(results.unit))
        assert len(speakers.counts) == 7
        for workers in (1, 2, 3):
            out = tmp_path / f"{normalizer}-{workers}"
            _, n = stream(iter(pairs), options, language=lang, out_dir=out, outputs=(*FILES, SPEAKERS),
                          workers=workers)
            assert n == len(pairs)
            for f in (*FILES, SPEAKERS):
                assert (held / f.name).read_bytes() == (out / f.name).read_bytes(), (normalizer, workers, f.name)


def _item_and_process(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


def test_fanout_gives_results_in_order_from_its_workers_drawing_items_a_window_ahead():
    from pipeline.exec import fanout

    drawn = []

    def items():
        for k in range(30):
            drawn.append(k)
            yield k

    results = []
    for result in fanout.ordered(_item_and_process, items(), workers=2):
        results.append(result)
        assert len(drawn) <= len(results) + fanout.WINDOW * 2  # a stream of any length holds a few items
    assert [x for x, _ in results] == [k * k for k in range(30)]
    assert os.getpid() not in {pid for _, pid in results}
    # one worker, or a single item, is computed here: no process is forked for nothing
    assert {pid for _, pid in fanout.ordered(_item_and_process, range(5), workers=1)} == {os.getpid()}
    assert list(fanout.ordered(_item_and_process, [3], workers=4)) == [(9, os.getpid())]


def _item_or_death(job: tuple[int, int]) -> int:
    x, parent = job
    if x == 7 and os.getpid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)  # as the system's out-of-memory killer would
    return x * x


def test_a_worker_that_dies_costs_time_not_results(caplog):
    from pipeline.exec import fanout

    jobs = [(k, os.getpid()) for k in range(20)]
    assert list(fanout.ordered(_item_or_death, jobs, workers=2)) == [k * k for k in range(20)]
    assert "a worker process died" in caplog.text


def test_a_containers_cpu_quota_bounds_the_workers(tmp_path):
    from pipeline.exec import fanout

    for text, cores in (("200000 100000\n", 2), ("150000 100000\n", 2), ("50000 100000\n", 1),
                        ("max 100000\n", fanout.MAX_WORKERS)):
        (tmp_path / "cpu.max").write_text(text)
        assert fanout.cgroup_cpus(str(tmp_path / "cpu.max")) == cores, text
    assert fanout.cgroup_cpus(str(tmp_path / "absent")) == fanout.MAX_WORKERS


def _children(pid: int) -> set[int]:
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[1]) == pid:
            out.add(int(stat.parent.name))
    return out


def test_ctrl_c_while_workers_score_stops_them_and_leaves_no_file(tmp_path):
    """Ctrl-C reaches `score` while its workers score: it exits 130 at once, its workers are stopped (not left
    running), and no output file, whole or part, is left."""
    import random

    rng = random.Random(3)
    words = "the a king crown to be or not question".split()
    with open(tmp_path / "ref.trn", "w") as ref, open(tmp_path / "hyp.trn", "w") as hyp:
        for k in range(60_000):
            line = " ".join(rng.choice(words) for _ in range(12))
            ref.write(f"{line} (u{k})\n")
            hyp.write(f"{line[::-1]} (u{k})\n")
    proc = subprocess.Popen([sys.executable, str(ROOT / "run_pipeline.py"), "score", "--ref", "ref.trn", "--hyp",
                             "hyp.trn", "--out", "out", "--workers", "2"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (workers := _children(proc.pid)):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert not [p for p in workers if Path(f"/proc/{p}").exists()]
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())
