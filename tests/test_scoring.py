import random
import shutil

import jiwer
import pytest

from pipeline.scoring.utterances import Pair
from pipeline.scoring import sclite
from pipeline.scoring.align import align_codes, align_text
from pipeline.scoring.config import ScoreConfig
from pipeline.scoring.evaluate import evaluate
from pipeline.scoring.normalize import get
from pipeline.scoring.rates import corpus_wer, spearman
from tests.helpers import SCLITE, pralign_rows, sclite_counts, sclite_pralign



def test_seed_example_is_eight_errors_without_filler_removal():
    a = align_text("Um I left this phone upstairs last night", "My sister her phone it stores less nine")
    assert (a.substitutions, a.deletions, a.insertions, a.errors, a.hits) == (6, 1, 1, 8, 1)
    assert a.wer == 1.0


def test_one_deletion_in_five_words_is_twenty_percent():
    a = align_text("I am very tired today", "I am tired today")
    assert (a.deletions, a.wer) == (1, 0.2)


def test_insertions_can_push_wer_past_one_hundred_percent():
    a = align_text("hello world", "hello there big world again")
    assert (a.ref_words, a.insertions, a.wer) == (2, 3, 1.5)


def test_error_count_equals_jiwer_process_words_on_random_pairs():
    rng = random.Random(0)
    vocab = "a b c d e the king lord".split()
    for _ in range(300):
        ref = " ".join(rng.choice(vocab) for _ in range(rng.randint(1, 9)))
        hyp = " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 9)))
        out = jiwer.process_words(ref, hyp) if hyp else None
        ours = align_text(ref, hyp)
        expected = (out.substitutions + out.deletions + out.insertions) if out else len(ref.split())
        assert ours.errors <= expected * 4 / 3 and ours.errors >= expected  # sclite weights never beat edit distance
        assert ours.hits + ours.substitutions + ours.deletions == ours.ref_words


@pytest.mark.skipif(not shutil.os.path.exists(SCLITE), reason="needs Debian sctk")
def test_counts_equal_nist_sclite(tmp_path):
    rng = random.Random(1)
    vocab = "a b c d e the king lord my sister phone".split()
    pairs = []
    for i in range(60):
        ref = " ".join(rng.choice(vocab) for _ in range(rng.randint(1, 10)))
        hyp = " ".join(rng.choice(vocab) for _ in range(rng.randint(1, 10)))
        pairs.append((f"spk_u{i:03d}", ref, hyp))
    pairs.append(("spk_seed", "um i left this phone upstairs last night", "my sister her phone it stores less nine"))
    scores = sclite_counts(tmp_path, pairs)
    assert len(scores) == len(pairs)
    for uid, ref, hyp in pairs:
        a = align_text(ref, hyp)
        assert scores[uid] == (a.hits, a.substitutions, a.deletions, a.insertions), uid


@pytest.mark.skipif(not shutil.os.path.exists(SCLITE), reason="needs Debian sctk")
def test_where_alignments_cost_the_same_the_one_sclite_takes_is_taken(tmp_path):
    """Over five words many alignments of a pair cost the same, and they can differ in their counts (four
    substitutions weigh as much as two deletions and two insertions): on 3,000 random pairs every utterance's counts
    and its alignment, word for word, are sclite's, which takes a deletion only where it is cheaper than an
    insertion. The aligner took the deletion on such a tie, and its counts differed from sclite's on 12 pairs of
    20,000, its alignment on 370."""
    rng = random.Random(3)
    pairs = [(f"spk_u{k:04d}", rng.choices("abcde", k=rng.randint(1, 10)), rng.choices("abcde", k=rng.randint(0, 10)))
             for k in range(3000)]
    (tmp_path / "ref.trn").write_text(sclite.write_trn([(u, " ".join(r)) for u, r, _ in pairs]))
    (tmp_path / "hyp.trn").write_text(sclite.write_trn([(u, " ".join(h)) for u, _, h in pairs]))
    codes = align_codes([r for _, r, _ in pairs], [h for _, _, h in pairs])
    ours = pralign_rows("".join(sclite.pralign(u, r, h, c) for (u, r, h), c in zip(pairs, codes)))
    assert ours == sclite_pralign(tmp_path)


@pytest.mark.skipif(not shutil.os.path.exists(SCLITE), reason="needs Debian sctk")
def test_a_long_recording_aligns_as_sclite_aligns_it(tmp_path):
    rng = random.Random(2)
    vocab = "a b c d e the king lord my sister phone".split()
    ref = [rng.choice(vocab) for _ in range(3000)]
    hyp = [w for w in ref if rng.random() > 0.05]
    hyp = [rng.choice(vocab) if rng.random() < 0.1 else w for w in hyp]
    (counts,) = sclite_counts(tmp_path, [("spk_long", " ".join(ref), " ".join(hyp))]).values()
    a = align_text(" ".join(ref), " ".join(hyp))
    assert counts == (a.hits, a.substitutions, a.deletions, a.insertions)


def test_pairs_aligned_in_one_call_equal_each_aligned_alone():
    from pipeline.scoring.align import align, align_codes, from_codes

    rng = random.Random(6)
    pairs = [([rng.choice("abc") for _ in range(rng.randint(0, 9))], [rng.choice("abd") for _ in range(rng.randint(0, 9))])
             for _ in range(300)]
    together = align_codes([r for r, _ in pairs], [h for _, h in pairs])
    assert [from_codes(r, h, c).ops for (r, h), c in zip(pairs, together)] == [align(r, h).ops for r, h in pairs]


def test_normalizers():
    assert get("none")("Now, King's  men!") == "Now, King's men!"
    assert get("basic")("Now, King’s men! 'Tis \"well\" 'quoted' o'er lovers' ' -") == \
        "now king's men 'tis well quoted o'er lovers'"
    whisper = get("whisper")
    assert whisper("Um, the king's crown") == "the king is crown"  # why it is not the default for Shakespeare
    assert whisper("I'd go") == "i would go"


def test_an_empty_reference_has_no_wer_and_its_words_count_as_insertions_in_the_corpus_as_jiwer_counts_them():
    rows = [Pair(sentence_id="a", reference="the king", hypothesis="the thing"),
            Pair(sentence_id="b", reference="...", hypothesis="uh oh"),
            Pair(sentence_id="c", reference="long live the king", hypothesis="long live the king")]
    r = evaluate(rows, ScoreConfig(normalize="basic", bootstrap=200))
    assert r.utterances[1].status == "empty_reference" and r.utterances[1].wer is None
    s = r.summary[0]
    assert (s.n_utterances, s.n_excluded, s.ref_words, s.errors, s.insertions, s.sentence_errors) == (3, 0, 6, 3, 2, 2)
    assert s.micro_wer == round(jiwer.wer(["the king", "", "long live the king"],
                                          ["the thing", "uh oh", "long live the king"]), 4) == 0.5
    assert s.macro_wer == 0.25  # the mean of the rates there are: 0.5 and 0
    assert s.ci95_low is not None and s.macro_ci95_low is not None  # resamples of "b" alone have no rate


def test_micro_macro_and_bootstrap():
    c = corpus_wer([1, 0, 3], [2, 8, 10], n_boot=500, seed=0)
    assert c.micro_wer == pytest.approx(4 / 20)
    assert c.macro_wer == pytest.approx((0.5 + 0 + 0.3) / 3)
    assert c.ci_low <= c.micro_wer <= c.ci_high
    assert corpus_wer([1, 0, 3], [2, 8, 10], n_boot=500, seed=0) == c  # seeded


def test_spearman_with_n_and_p():
    s = spearman([1, 2, 3, 4, 5], [0.1, 0.2, 0.3, 0.5, 0.4])
    assert s.n == 5 and s.rho == pytest.approx(0.9) and 0 < s.p < 0.1
    assert spearman([1, 2], [1, 2]).rho is None  # too few to say anything


def test_pralign_marks_errors_and_gaps():
    ref, hyp = "i am very tired today".split(), "i am tired today too".split()
    text = sclite.pralign("u1", ref, hyp, align_codes([ref], [hyp])[0])
    lines = text.splitlines()
    assert lines[1] == "Scores: (#C #S #D #I) 4 0 1 1  WER 40.0%"
    assert "VERY" in lines[2] and "****" in lines[3] and "TOO" in lines[3]
    assert lines[4].split() == ["Eval:", "D", "I"]


def test_health_flags_on_cases_known_by_construction():
    from pipeline.scoring.flags import compression_ratio, flags, longest_repeat

    ref = "to be or not to be that is the question"
    assert flags(ref, ref, -12.0) == []
    assert flags(ref, ref, -80.0) == ["silent_audio"]
    assert flags(ref, "", -12.0) == ["empty_hypothesis"]
    assert flags("", "", -120.0, speech_expected=False) == []  # the silence condition: the right outcome
    loop = ref + " the question" * 6
    assert longest_repeat(loop.split()) == 7 and "repetition" in flags(ref, loop, -12.0)
    assert compression_ratio("thank you " * 40) > 2.4 and "repetition" in flags("", "thank you " * 40, None)
    # a repetition the reference has too is the text, not a loop
    tomorrow = "tomorrow and tomorrow and tomorrow and tomorrow creeps in this petty pace"
    assert longest_repeat(tomorrow.split()) == 3 and flags(tomorrow, tomorrow, -12.0) == []
    assert "runaway_insertions" in flags("two words", "one two three four five six seven eight nine ten", -12.0)
    assert "runaway_insertions" not in flags("two words", "one two three four five six seven eight nine", -12.0)


def test_the_loop_flag_skips_its_scan_only_where_the_scan_would_find_nothing():
    import random

    from pipeline.scoring.flags import REPEATS, longest_repeat, loops

    rng = random.Random(11)
    for _ in range(20_000):
        vocab = "abcdefg"[:rng.randint(1, 7)]
        ref, hyp = (rng.choices(vocab, k=rng.randint(0, 14)) for _ in range(2))
        if rng.random() < 0.3:
            hyp += hyp[-rng.randint(1, 3):] * rng.randint(1, 4)
        scanned = longest_repeat(hyp)
        assert loops(ref, hyp) == (scanned >= REPEATS and scanned > longest_repeat(ref)), (ref, hyp)


def test_jiwer_codes_are_jiwers_own_alignment_for_words_and_for_characters():
    """The seed-tts-eval recipes' aligner against jiwer's process_words, chunk by chunk: on character units (one
    string given to rapidfuzz as it is) and on words (mapped to characters, as jiwer maps them)."""
    import random

    import jiwer

    from pipeline.scoring.align import DELETION, HIT, INSERTION, SUBSTITUTION, jiwer_codes

    rng = random.Random(3)
    kind = {HIT: "equal", SUBSTITUTION: "substitute", DELETION: "delete", INSERTION: "insert"}
    for units in ("我们的一是在不", ["the", "king", "crown", "a", "to"], ["ab", "a", "b", "ba"]):
        refs = [rng.choices(units, k=rng.randint(1, 12)) for _ in range(400)]
        hyps = [rng.choices(units, k=rng.randint(1, 12)) if rng.random() < 0.5
                else [w if rng.random() > 0.2 else rng.choice(units) for w in r] for r in refs]
        for ref, hyp, codes in zip(refs, hyps, jiwer_codes(refs, hyps)):
            out = jiwer.process_words(" ".join(ref), " ".join(hyp))
            chunks = [(c.type, c.ref_end_idx - c.ref_start_idx, c.hyp_end_idx - c.hyp_start_idx)
                      for c in out.alignments[0]]
            ours, i = [], 0
            while i < len(codes):  # runs of one op, as jiwer's chunks
                j = i
                while j < len(codes) and codes[j] == codes[i]:
                    j += 1
                ours.append((kind[codes[i]], (j - i) * (codes[i] != INSERTION), (j - i) * (codes[i] != DELETION)))
                i = j
            assert ours == chunks, (ref, hyp)


def test_level_is_the_loudest_frame_in_dbfs():
    import numpy as np

    from pipeline.io.audio import FLOOR_DBFS, level_dbfs

    t = np.arange(16000) / 16000
    tone = (0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
    assert level_dbfs(tone) == pytest.approx(20 * np.log10(0.5 / np.sqrt(2)), abs=0.05)
    assert level_dbfs(np.zeros(16000, np.float32)) == FLOOR_DBFS
    quiet_then_loud = np.concatenate([tone * 0.001, tone])  # the loudest part counts, not the average
    assert level_dbfs(quiet_then_loud) == pytest.approx(level_dbfs(tone), abs=0.05)


def test_bootstrap_draws_are_numpys_default_draws_whatever_their_type_and_thread_count(monkeypatch):
    """resamples() draws uint32 for speed: the same numbers, block by block, as numpy's default int64 draw of the
    whole (n_boot, n) table; and the interval is the same on one thread as on several."""
    import numpy as np

    from pipeline.scoring import rates

    for n, n_boot, block in ((7, 50, 1 << 22), (100_000, 90, 1 << 22), (1000, 300, 5000)):
        monkeypatch.setattr(rates, "BOOTSTRAP_BLOCK", block)
        drawn = np.concatenate(list(rates.resamples(n, n_boot, 11)))
        assert drawn.dtype == np.uint32
        assert np.array_equal(drawn, np.random.default_rng(11).integers(0, n, size=(n_boot, n)))
    rng = np.random.default_rng(3)
    ref = rng.integers(1, 30, 5000)
    errors = rng.binomial(ref, 0.2)
    figures = {}
    for threads in (1, 3):
        monkeypatch.setattr(rates, "BOOTSTRAP_THREADS", threads)
        figures[threads] = rates.corpus_wer(list(errors), list(ref), 1000, 5)
    assert figures[1] == figures[3] and figures[1].ci_low < figures[1].micro_wer < figures[1].ci_high


def test_the_aligner_uncompiled_and_compiled_gives_the_same_codes(monkeypatch):
    """A run's few utterances are aligned by the aligner's function as Python runs it, a corpus by numba's
    compilation of the same function: the same op codes for every pair, ties included."""
    from pipeline.scoring import align

    rng = random.Random(9)
    pairs = [([rng.choice("abcd") for _ in range(rng.randint(0, 14))], [rng.choice("abce") for _ in range(rng.randint(0, 14))])
             for _ in range(400)]
    refs, hyps = [r for r, _ in pairs], [h for _, h in pairs]
    monkeypatch.setattr(align, "INTERPRETED_CELLS", 10 ** 9)
    uncompiled = align.align_codes(refs, hyps)
    monkeypatch.setattr(align, "INTERPRETED_CELLS", 0)
    assert align.align_codes(refs, hyps) == uncompiled
    assert sum(c != align.HIT for codes in uncompiled for c in codes) > 1000  # errors of every kind, many ties
