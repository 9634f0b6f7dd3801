"""Typed answers scored (listen/typed.py): the strict figure against NIST sclite, each rule of the listener
normalizer, each tolerant rule on its own cases and on the cases it must refuse; and the transcription analysis on a
simulated panel whose listeners miss words with known probabilities."""
import random
import shutil
import subprocess

import numpy as np
import pytest

from pipeline.listen import analysis, typed
from pipeline.listen.kinds import KINDS
from tests.test_scoring import SCLITE


def sclite_counts(tmp_path, pairs: list[tuple[str, str]]) -> list[tuple[int, int, int, int]]:
    """(H, S, D, I) of each pair as sclite aligns them."""
    (tmp_path / "ref.trn").write_text("".join(f"{r} (spk_u{i:03d})\n" for i, (r, _) in enumerate(pairs)))
    (tmp_path / "hyp.trn").write_text("".join(f"{h} (spk_u{i:03d})\n" for i, (_, h) in enumerate(pairs)))
    out = subprocess.run([SCLITE, "-r", "ref.trn", "trn", "-h", "hyp.trn", "trn", "-i", "spu_id", "-o", "pralign",
                          "stdout"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    found, current = {}, None
    for line in out.splitlines():
        if line.startswith("id: ("):
            current = line[5:-1]
        elif line.startswith("Scores:") and current:
            found[current] = tuple(int(x) for x in line.split(")")[1].split())
    return [found[f"spk_u{i:03d}"] for i in range(len(pairs))]


@pytest.mark.skipif(not shutil.os.path.exists(SCLITE), reason="needs Debian sctk")
def test_strict_equals_sclite_on_answers_the_normalizer_leaves_as_they_are(tmp_path):
    rng = random.Random(3)
    vocab = "the king lord my sister phone garden window mercy quality strained heaven".split()
    pairs = []
    for _ in range(80):
        ref = [rng.choice(vocab) for _ in range(rng.randint(1, 12))]
        typed_words = [w for w in ref if rng.random() > 0.15]
        typed_words = [rng.choice(vocab) if rng.random() < 0.15 else w for w in typed_words]
        typed_words += [rng.choice(vocab) for _ in range(rng.random() < 0.2)]
        pairs.append((" ".join(ref), " ".join(typed_words) or "mercy"))
    for (ref, given), counts in zip(pairs, sclite_counts(tmp_path, pairs)):
        found = typed.score(ref, given).strict
        assert (found.hits, found.substitutions, found.deletions, found.insertions) == counts, (ref, given)


@pytest.mark.parametrize("sentence, answer", [
    ("Now is the winter", "NOW IS THE WINTER"),  # case
    ("To be, or not to be: that is the question!", "to be or not to be that is the question"),  # punctuation
    ("The king's crown", "the kings crown"),  # apostrophes
    ("The king\u2019s crown", "the king's crown"),  # a curly apostrophe
    ("ｔｈｅ ｋｉｎｇ", "the king"),  # full-width letters: NFKC
    ("café", "cafe\u0301"),  # a composed letter and its decomposed spelling
    ("a well-known face", "a well known face"),  # hyphens split
    ("a well—known face", "a well known face"),  # a dash too
    ("twenty-one men", "21 men"),  # numbers as digits
    ("one of them", "1 of them"),  # a lone small number
    ("in nineteen eighty four", "in 1984"),
    ("every day", "everyday"),  # a compound joined
    ("sometimes we walk", "some times we walk"),  # a compound split
])
def test_each_rule_of_the_listener_normalizer_makes_an_answer_right(sentence, answer):
    assert typed.score(sentence, answer).strict.errors == 0


@pytest.mark.parametrize("sentence, answer", [
    ("the king", "the kings"),  # a plural is another word
    ("twenty one", "21 1"),  # numbers are compared as written after the rules, not as arithmetic
    ("every day", "everyday day"),  # a compound matched once, not the sentence's words twice
    ("the sea", "the c"),
])
def test_the_normalizer_does_not_make_a_wrong_answer_right(sentence, answer):
    assert typed.score(sentence, answer).strict.errors > 0


@pytest.mark.parametrize("word, answer, rule", [
    ("knight", "night", typed.HOMOPHONE), ("their", "there", typed.HOMOPHONE), ("write", "right", typed.HOMOPHONE),
    ("bare", "bear", typed.HOMOPHONE), ("sea", "see", typed.HOMOPHONE), ("flour", "flower", typed.HOMOPHONE),
    ("receive", "recieve", typed.MISSPELLING), ("separate", "seperate", typed.MISSPELLING),
    ("definitely", "definately", typed.MISSPELLING), ("necessary", "neccesary", typed.MISSPELLING),
    ("garden", "gardne", typed.MISSPELLING),  # two neighbouring letters swapped: one edit
])
def test_each_tolerant_rule_forgives_its_own_cases_and_says_so(word, answer, rule):
    found = typed.score(f"the {word} is here", f"the {answer} is here")
    assert found.strict.errors == 1 and found.tolerant_errors == 0
    assert found.rules == [(word, answer, rule)]


@pytest.mark.parametrize("word, answer", [
    ("bad", "bat"),  # a word of its own, said otherwise
    ("knight", "knit"),
    ("house", "mouse"),  # a word, and another first letter
    ("cat", "cta"),  # too short to call a slip of the keys
    ("garden", "gardxyz"),  # three edits away
    ("receive", "deceive"),
])
def test_no_tolerant_rule_forgives_another_word(word, answer):
    found = typed.score(f"the {word} is here", f"the {answer} is here")
    assert found.tolerant_errors == found.strict.errors == 1 and found.rules == []


def test_a_simulated_panel_recovers_its_word_error_rate_within_its_intervals():
    """Five listeners on twenty sentences in two systems, each word missed with probability 0.1 in v1 and 0.3 in v2,
    and an engine that misses with the same probabilities: each listeners' micro WER's 95% interval holds the
    panel's own rate in most of twenty panels (the two-way bootstrap is conservative, never optimistic: at least 34
    of 40), the engine ranks the systems as the listeners do, and every word is counted once by who missed it."""
    kind = KINDS.get("transcribe")
    vocab = "the king lord my sister phone garden window mercy quality strained heaven".split()
    rng = np.random.default_rng(5)
    rate = {"v1": 0.1, "v2": 0.3}
    sentences = [" ".join(rng.choice(vocab, 8)) for _ in range(20)]

    def typing(sentence, system):
        return " ".join(w for w in sentence.split() if rng.random() > rate[system]) or "-"

    held = 0
    for panel in range(20):
        clips = {f"{system}-{i}": {"system": system, "sentence": f"s{i}", "reference": s, "run": system,
                                   "voice": "", "utterance_id": f"{system}-{i}", "run_folder": "", "source_sha256": "",
                                   "heard": {"asr": typing(s, system)}}
                 for system in rate for i, s in enumerate(sentences)}
        votes = [analysis.Vote(listener, f"l{listener}", cid, "test", answer, answer, None, clip["sentence"], cid,
                               None, True, 1)
                 for listener in range(5) for cid, clip in clips.items()
                 for answer in [typing(clip["reference"], clip["system"])]]
        found = analysis.Analysis(test="t", kind="transcribe", listeners=5, accepted=5, votes=len(votes))
        kind.analyse(found, votes, clips, 300, panel)
        rows = {(h.system, h.by): h for h in found.tables["heard"]}
        held += sum(rows[system, "listeners"].micro_ci95_low <= p <= rows[system, "listeners"].micro_ci95_high
                    for system, p in rate.items())
        (ranking,) = found.tables["rankings"]
        assert ranking.same and ranking.listeners == ["v1", "v2"]
        for m in found.tables["misses"]:
            words = [w for w in found.tables["words"] if w.system == m.system]
            assert m.words == len(words) == 20 * 8
            assert (m.both, m.listeners_only, m.engine_only) == tuple(
                sum(w.missed_by == who for w in words) for who in ("both", "listeners", "engine"))
        assert {a.measure for a in found.agreements} == {"asr"} and len(found.clips) == 40
    assert held >= 34, held


def test_an_answer_is_checked_before_it_is_stored():
    kind = KINDS.get("transcribe")
    assert kind.refused("the king") is None
    assert kind.stored("cafe\u0301") == (None, "café")  # NFC
    for bad, why in ((3, "as text"), ("", "empty"), ("x" * 501, "at most 500"), ("a\u200bb", "U+200B"),
                     ("a\nb", "U+000A")):
        assert why in kind.refused(bad)
