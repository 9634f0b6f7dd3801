"""The LM's surprisal at each reference word, and what scoring does with it: each on a case computed by hand."""
import math

import pytest
import torch
import torch.nn.functional as F

from pipeline.scoring.utterances import Pair
from pipeline.lm import tokenizer
from pipeline.lm.model import GPT, GPT2_VOCAB, GPTConfig
from pipeline.lm.perplexity import sequence_nll
from pipeline.lm.surprisal import word_surprisal
from pipeline.statistics import difficulty, failures_by_surprisal
from pipeline.statistics import words as failing
from pipeline.scoring.config import ScoreConfig
from pipeline.scoring.evaluate import evaluate


@pytest.mark.parametrize("block_size", [64, 8])  # 8: the sentence is scored in sliding windows
def test_a_words_surprisal_is_its_tokens_bits_summed(block_size):
    torch.manual_seed(0)
    model = GPT(GPTConfig(n_layer=2, n_head=2, n_embd=32, block_size=block_size)).eval()
    text = "Now is the winter of our discontent, made glorious summer."
    context, ids = tokenizer.encode("\n"), tokenizer.encode(text)
    bits = word_surprisal(model, text, context)
    assert len(bits) == len(text.split()) == 10
    if block_size >= len(context + ids):  # by hand: one forward pass, each token's −log₂ p, summed by word
        seq = torch.tensor([context + ids])
        with torch.no_grad():
            logits, _ = model(seq[:, :-1])
        logp = F.log_softmax(logits[0, :, :GPT2_VOCAB].float(), dim=-1)
        token_bits = [-logp[len(context) - 1 + k, t].item() / math.log(2) for k, t in enumerate(ids)]
        # a token belongs to the word its text ends in (the sentence has single spaces only)
        owner = [len(tokenizer.decode(ids[:k + 1]).split()) - 1 for k in range(len(ids))]
        expected = [sum(b for b, o in zip(token_bits, owner) if o == w) for w in range(10)]
        assert bits == pytest.approx(expected, rel=1e-5)
    nll, n = sequence_nll(model, ids, context)
    assert n == len(ids) and sum(bits) == pytest.approx(nll / math.log(2), rel=1e-6)  # the words are the sentence


def test_odd_spacing_and_non_ascii_words_keep_every_token():
    torch.manual_seed(1)
    model = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=64)).eval()
    text = "Café  naïve—thou  art"  # double spaces: tokens of spaces alone go with the next word
    bits = word_surprisal(model, text, tokenizer.encode("\n"))
    nll, _ = sequence_nll(model, tokenizer.encode(text), tokenizer.encode("\n"))
    assert len(bits) == 3 and all(b > 0 for b in bits) and sum(bits) == pytest.approx(nll / math.log(2), rel=1e-6)


def row(sentence, asr, reference, hypothesis, bits, voice="v:1"):
    return Pair(sentence_id=sentence, voice=voice, asr=asr, condition="clean", reference=reference,
                hypothesis=hypothesis, word_surprisal=tuple(bits))


def test_each_error_and_word_carries_its_reference_words_surprisal():
    rows = [row("s1", "e:1", "Now is the winter.", "now is a winter of", [1.5, 2.0, 3.25, 9.0]),
            row("s2", "e:1", "The winter, gone!", "the gone", [0.5, 8.0, 4.0])]
    r = evaluate(rows, ScoreConfig(bootstrap=0))
    assert [u.word_surprisal for u in r.utterances] == [[1.5, 2.0, 3.25, 9.0], [0.5, 8.0, 4.0]]
    assert [(e.type, e.reference_word, e.surprisal) for e in r.events] == [
        ("substitution", "the", 3.25), ("insertion", "", None), ("deletion", "winter", 8.0)]
    words = {w.word: w for w in failing.words(r)}
    assert words["the"].mean_surprisal == pytest.approx((3.25 + 0.5) / 2)  # failed once, heard right once
    assert words["winter"].mean_surprisal == pytest.approx((9.0 + 8.0) / 2)
    # whisper's normalizer rewrites across words ("2 pounds" → "£2"): that sentence is left without surprisal
    # rather than given misplaced values; the basic normalizer keeps one word per word
    for normalizer, expected in (("whisper", []), ("basic", [1, 2, 3, 4])):
        u, = evaluate([row("s3", "e:1", "It cost 2 pounds", "it cost two pounds", [1, 2, 3, 4])],
                      ScoreConfig(normalize=normalizer, bootstrap=0)).utterances
        assert u.word_surprisal == expected, normalizer


def test_failure_rate_by_surprisal_decile_and_its_rank_correlation():
    # 20 sentences of 5 words with surprisal 1..100 bits; the engine fails exactly the words above 60 bits
    rows = []
    for s in range(20):
        bits = [s * 5 + k + 1 for k in range(5)]
        words = [f"w{b}" for b in bits]
        heard = [w if b <= 60 else "x" for w, b in zip(words, bits)]
        rows.append(row(f"s{s}", "e:1", " ".join(words), " ".join(heard), bits))
    r = evaluate(rows, ScoreConfig(bootstrap=0))
    deciles = difficulty.surprisal_bins(r, n_boot=200)
    assert [d.bin.split()[0] for d in deciles] == [f"D{k}" for k in range(1, 11)]
    assert [d.n_words for d in deciles] == [10] * 10
    assert [d.micro_wer for d in deciles] == [0.0] * 6 + [1.0] * 4  # words 61-100 are deciles 7-10
    assert deciles[0].ci95_low == deciles[0].ci95_high == 0.0
    (effect,) = failures_by_surprisal.effects(r)
    assert (effect.words, effect.failures) == (100, 40)
    assert effect.mean_surprisal_failed == pytest.approx(80.5) and effect.mean_surprisal_right == pytest.approx(30.5)
    # ρ of ranks 1..100 against 60 zeros then 40 ones, by hand: the point-biserial correlation of the ranks
    ranks, fails = list(range(1, 101)), [0.0] * 60 + [1.0] * 40
    mr, mf = sum(ranks) / 100, sum(fails) / 100
    cov = sum((a - mr) * (b - mf) for a, b in zip(ranks, fails))
    rho = cov / math.sqrt(sum((a - mr) ** 2 for a in ranks) * sum((b - mf) ** 2 for b in fails))
    assert effect.spearman_rho == pytest.approx(rho, abs=1e-4) and effect.spearman_p < 1e-10
