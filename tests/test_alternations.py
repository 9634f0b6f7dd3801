"""sclite's alternations in a trn reference (`{ going to / gonna }`, `@` for saying nothing) are scored as sclite
scores them, by `run_pipeline.py score`: before, each brace and slash was a word of the reference."""
import random
import re
from pathlib import Path

import pytest

from pipeline.core import store
from pipeline.scoring import alternations, normalize
from tests.helpers import SCLITE, sclite_counts, sclite_pralign
from tests.test_score_cli import score

needs_sclite = pytest.mark.skipif(not Path(SCLITE).exists(), reason="needs Debian sctk")

# as NIST's references for conversational speech write them
CONVERSATION = [
    ("spk_a", "we are { going to / gonna } go there", "we are gonna go there"),
    ("spk_b", "{ uh / um / @ } i think so", "i think so"),
    ("spk_c", "{ uh / um / @ } i think so", "um i think so"),
    ("spk_d", "call { mister / mr } smith { today / @ }", "call mr smith to day"),
    ("spk_e", "the cat { sat / sit } on the mat", "the cat sit on a mat"),
    ("spk_f", "hello { there / @ } world", "hello their world"),
]


def test_a_reference_is_read_as_its_pieces_and_their_ways():
    assert alternations.parse("we are { going to / gonna } go") == [("we are ",), ("going to", "gonna"), (" go",)]
    assert alternations.parse("{ uh / @ } hello") == [("",), ("uh", ""), (" hello",)]
    assert alternations.parse("no alternation here") == [("no alternation here",)]
    # one inside another: the paths of sclite's network of them, in the order written
    assert alternations.parse("a { b / { c / @ } d } e") == [("a ",), ("b", "c d", "d"), (" e",)]
    ten = "{ a / b / c / d / e / f / g / h / i / j }"
    for bad, says in (("a { b / c", "without its pair"), ("a } b", "without its pair"),
                      ("a { b / { c } }", "one alternative"), ("a { b } c", "one alternative"),
                      (f"{{ {ten} {ten} {ten} {{ a / b }} / x }}", "2001 ways with those inside it; at most 1000")):
        with pytest.raises(ValueError, match=says):
            alternations.parse(bad)


def scored(tmp_path, pairs, *flags) -> dict[str, dict]:
    (tmp_path / "ref.trn").write_text("".join(f"{r} ({u})\n" for u, r, _ in pairs))
    (tmp_path / "hyp.trn").write_text("".join(f"{h} ({u})\n" for u, _, h in pairs))
    proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "hyp.trn"), "--out",
                 str(tmp_path / "out"), *flags)
    assert proc.returncode == 0, proc.stderr
    return {r["id"]: r for r in store.read_csv(tmp_path / "out" / "utterances.csv")}


def counts(row: dict) -> tuple[int, ...]:
    return tuple(int(row[k]) for k in ("hits", "substitutions", "deletions", "insertions"))


@needs_sclite
def test_conversational_references_are_counted_as_sclite_counts_them(tmp_path):
    ours = scored(tmp_path, CONVERSATION, "--normalize", "none")
    theirs = sclite_counts(tmp_path, CONVERSATION)
    assert {u: counts(r) for u, r in ours.items()} == theirs
    assert ours["spk_a"]["reference"] == "we are gonna go there" and ours["spk_a"]["errors"] == "0"
    assert ours["spk_b"]["ref_words"] == "3"  # a way of saying nothing counts no word
    summary = store.read_json(tmp_path / "out" / "summary.json")["groups"][0]
    assert summary["ref_words"] == sum(h + s + d for h, s, d, _ in theirs.values())
    # the reading is what is written: sclite scores the tool's ref.trn as it scored the alternations
    rewritten = [(u, r["reference"], r["hypothesis"]) for u, r in ours.items()]
    assert sclite_counts(tmp_path / "out", rewritten) == theirs


def random_pairs(rng: random.Random, vocabulary: list[str], n: int, noisy: bool, heard_ways: bool = False,
                 nested: bool = False) -> list[tuple[str, str, str]]:
    """References with alternations of 0-2 words (`@` for none), and hypotheses: one way of saying the reference
    with words dropped, changed and added, or (noisy=False) words drawn at random; `heard_ways`: some of the
    hypothesis' words written as alternations too, as a GLM writes them; `nested`: some ways with an alternation
    inside them."""
    def words(most: int) -> list[str]:
        return [rng.choice(vocabulary) for _ in range(rng.randint(0, most))]

    def way(inner: bool) -> str:
        said = words(2)
        if nested and not inner and rng.random() < 0.4:
            said.insert(min(1, len(said)), ways(inner=True))
        return " ".join(said) or "@"

    def ways(inner: bool = False) -> str:
        return "{ " + " / ".join(way(inner) for _ in range(rng.randint(2, 3))) + " }"
    pairs = []
    for k in range(n):
        parts = words(2)
        for _ in range(rng.randint(1, 3)):
            parts += [ways(), *words(2)]
        reference = " ".join(parts)
        if noisy:
            said = " ".join(rng.choice(piece) for piece in alternations.parse(reference)).split()
            hypothesis = [rng.choice(vocabulary) if rng.random() < 0.15 else w for w in said if rng.random() > 0.1]
            hypothesis += words(1)
        else:
            hypothesis = words(6)
        if heard_ways:
            hypothesis = [ways() if rng.random() < 0.2 else w for w in hypothesis] + [ways()] * (rng.random() < 0.3)
        pairs.append((f"spk_u{k:04d}", reference, " ".join(hypothesis)))
    return pairs


@needs_sclite
@pytest.mark.parametrize("vocabulary, noisy", [([f"w{i}" for i in range(40)], True), (list("abcd"), False)],
                         ids=["transcripts", "four-words"])
def test_random_references_are_aligned_as_sclite_aligns_them(tmp_path, vocabulary, noisy):
    """Four words drawn at random make many alignments of equal cost, where only sclite's own order of preference
    gives its counts."""
    pairs = random_pairs(random.Random(7), vocabulary, 1500, noisy)
    ours = {u: counts(r) for u, r in scored(tmp_path, pairs, "--normalize", "none").items()}
    assert ours == sclite_counts(tmp_path, pairs)


@needs_sclite
@pytest.mark.parametrize("vocabulary, noisy", [([f"w{i}" for i in range(40)], True), (list("abcd"), False)],
                         ids=["transcripts", "four-words"])
def test_hypotheses_that_write_alternations_are_read_as_sclite_reads_them(tmp_path, vocabulary, noisy):
    """sclite aligns a hypothesis' network with the reference's: the counts, and the ways read on both sides (its
    pralign's REF and HYP rows), are sclite's."""
    pairs = random_pairs(random.Random(11), vocabulary, 800, noisy, heard_ways=True)
    ours = scored(tmp_path, pairs, "--normalize", "none")
    theirs = sclite_pralign(tmp_path)
    assert {u: counts(r) for u, r in ours.items()} == {u: c for u, (c, _, _) in theirs.items()}
    for uid, row in ours.items():
        _, ref_row, hyp_row = theirs[uid]
        assert row["reference"].split() == [w.lower() for w in ref_row if set(w) != {"*"}]  # errors upper-cased
        assert row["hypothesis"].split() == [w.lower() for w in hyp_row if set(w) != {"*"}]


@needs_sclite
@pytest.mark.parametrize("vocabulary, noisy", [([f"w{i}" for i in range(40)], True), (list("abcd"), False)],
                         ids=["transcripts", "four-words"])
def test_alternations_inside_others_are_read_as_sclite_reads_them(tmp_path, vocabulary, noisy):
    """On both sides, `@` inside them, many ties among four words: each is a network inside its way, as sclite's
    expand_alternates builds it, so the counts and the ways read on both sides are sclite's (spelled out into flat
    ways instead, 0.7-2% of these utterances took another way of the same cost)."""
    pairs = random_pairs(random.Random(5), vocabulary, 300, noisy, heard_ways=True, nested=True)
    assert sum(bool(re.search(r"\{[^}]*\{", r)) for _, r, _ in pairs) > 50
    ours = scored(tmp_path, pairs, "--normalize", "none")
    theirs = sclite_pralign(tmp_path)
    assert len(ours) == 300
    assert {u: counts(r) for u, r in ours.items()} == {u: c for u, (c, _, _) in theirs.items()}
    for uid, row in ours.items():
        _, ref_row, hyp_row = theirs[uid]
        assert row["reference"].split() == [w.lower() for w in ref_row if set(w) != {"*"}]
        assert row["hypothesis"].split() == [w.lower() for w in hyp_row if set(w) != {"*"}]


def test_alternations_are_normalized_as_the_rest_and_a_broken_one_is_a_clear_error(tmp_path, monkeypatch):
    rows = scored(tmp_path, [("spk_a", "We're { Going to / gonna } GO!", "we're gonna go")])
    assert rows["spk_a"]["errors"] == "0" and rows["spk_a"]["reference_normalized"] == "we're gonna go"
    (tmp_path / "ref.trn").write_text("fine (spk_a)\nwe { are / were go (spk_b)\n")
    (tmp_path / "hyp.trn").write_text("fine (spk_a)\nwe are go (spk_b)\n")
    proc = score("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "hyp.trn"), "--out",
                 str(tmp_path / "bad"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "utterance spk_b" in proc.stderr and "without its pair" in proc.stderr
    assert not (tmp_path / "bad").exists()
    # a normalizer that rewrites across words gives the way's text, aligned as any reference is
    whisper = normalize.for_language("whisper", "en")
    assert alternations.resolve("{ twenty / 20 } five", "25", whisper)[:3] == ("twenty five", None, None)
    rows = scored(tmp_path, [("spk_n", "{ twenty / 20 } five", "25")], "--normalize", "whisper")
    assert rows["spk_n"]["errors"] == "0"
    monkeypatch.setattr(alternations, "MOST_CELLS", 20)
    with pytest.raises(ValueError, match="cut the utterance"):
        alternations.resolve("a b c { d / e } f", "a b c d", whisper)


def test_the_words_of_the_way_a_hypothesis_is_read_are_found_among_those_written():
    """read_positions: where each word of the way read (Resolved.heard_ways) stands in the hypothesis as written (what
    carries a ctm's confidences to them), `@` and the ways not taken passed over."""
    sclite = normalize.for_language("sclite", "en")
    found = alternations.resolve("a b c d", "a { x y / b } c { @ / d } @ e", sclite)
    assert found.hypothesis == "a b c d @ e"
    written = "a { x y / b } c { @ / d } @ e".split()
    read = alternations.read_positions("a { x y / b } c { @ / d } @ e", list(found.heard_ways))
    assert read == (0, 5, 7, 11, 13, 14) and [written[i] for i in read] == found.hypothesis.split()
    assert alternations.read_positions("a {b / c} d", [0, 1, 0]) == ()  # braces against the words: not found


def test_networks_are_aligned_alike_uncompiled_and_compiled(monkeypatch):
    """A run's few alternations are aligned by _whole_steps as Python runs it, a corpus's by numba's compilation of
    the same function: the same ways taken and op codes on both sides for every pair, ties, -D and -F included."""
    from pipeline.scoring.align import HIT
    from pipeline.scoring.lenient import BOTH

    rng = random.Random(13)
    vocabulary = list("abcd") + ["(uh)", "th-", "-ing"]

    def network(most: int) -> list[list[list[str]]]:  # pieces of one way, or alternations of two or three
        return [[[rng.choice(vocabulary) for _ in range(rng.randint(1, 2))] for _ in range(rng.choice([1, 1, 2, 3]))]
                for _ in range(rng.randint(1, most))]
    pairs = [(network(6), network(5)) for _ in range(300)]
    found = {}
    for cells in (10 ** 9, 0):
        monkeypatch.setattr(alternations, "INTERPRETED_CELLS", cells)
        found[cells] = [alternations.align(ref, hyp, BOTH) for ref, hyp in pairs]
    assert found[0] == found[10 ** 9]
    assert sum(c != HIT for _, _, codes, _ in found[0] for c in codes) > 500  # errors of every kind, many ties
