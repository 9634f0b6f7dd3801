"""The trained model's attention as the report draws it: the model's own softmax, captured, not recomputed."""
import math

import pytest
import torch

from pipeline.lm import attention_maps, tokenizer
from pipeline.lm.model import GPT, GPTConfig, causal_mask


@pytest.mark.parametrize("fast", [False, True])
def test_the_weights_are_the_models_causal_softmax(fast):
    torch.manual_seed(0)
    model = GPT(GPTConfig(n_layer=2, n_head=4, n_embd=32, block_size=32, fast_attention=fast)).eval()
    tokens, weights = attention_maps.sentence(model, "Now is the winter of our discontent.", tokenizer.encode("\n"))
    n = len(tokens)
    assert tokens[0] == "⏎" and tokens[1] == "Now" and tokens[2] == "␣is" and weights.shape == (2, 4, n, n)
    assert all(b.attn.fast == fast for b in model.blocks)  # the model is left as it was
    w = torch.from_numpy(weights)
    assert torch.allclose(w.sum(-1), torch.ones(2, 4, n), atol=1e-6)  # each row a distribution
    assert (w[..., causal_mask(n)] == 0).all()  # the future, exactly 0
    # independently: Q and K as the layers' own projections made them, through softmax(QKᵀ/√d_k + mask)
    q_k = {}
    hooks = [m.register_forward_hook(lambda mod, args, out, key=(layer, name): q_k.__setitem__(key, out))
             for layer, block in enumerate(model.blocks) for name, m in (("q", block.attn.query), ("k", block.attn.key))]
    with torch.no_grad():
        model(torch.tensor([tokenizer.encode("\n") + tokenizer.encode("Now is the winter of our discontent.")]))
    for h in hooks:
        h.remove()
    for layer in range(2):
        q, k = (q_k[(layer, x)][0].view(n, 4, 8).transpose(0, 1) for x in ("q", "k"))
        scores = (q @ k.transpose(-2, -1) / math.sqrt(8)).masked_fill(causal_mask(n), float("-inf"))
        assert torch.allclose(w[layer], torch.softmax(scores, -1), atol=1e-6), layer


def test_a_sentence_longer_than_a_block_is_cut_to_one():
    model = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=8)).eval()
    tokens, weights = attention_maps.sentence(model, "one two three four five six seven eight nine ten", [198])
    assert len(tokens) == 8 and weights.shape == (1, 2, 8, 8)


def test_the_report_embeds_the_first_sentences_weights_and_says_when_it_holds_fewer(monkeypatch):
    import json
    import re

    import numpy as np

    from pipeline.render.sections import lm_attention as section

    rng = np.random.default_rng(0)
    attention = {}
    for sid in ("a", "b", "c"):
        w = rng.random((1, 2, 3, 3)) * np.tril(np.ones((3, 3)))
        attention[sid] = (["⏎", "Now", "␣is"], w / w.sum(-1, keepdims=True))
    monkeypatch.setattr(section, "ATTENTION_SHOWN", 2)
    page = section.embedded(attention)
    data = json.loads(re.search(r'id="attention-data">(.*?)</script>', page, re.S).group(1))
    assert list(data) == ["a", "b"] and "first 2 of 3 sentences" in page
    rows = data["a"]["w"][0][1]  # layer 1, head 2: rows of the visible part, the future as 0
    assert rows[0][1:] == [0, 0] and all(abs(sum(r) - 1) < 2e-3 for r in rows)
