"""Surprisal: how unexpected each word of a text was to the LM, in bits. A word's surprisal is the sum of its GPT-2
tokens' −log₂ p, each given the prompt and every token before it, so the words of a text sum to its NLL in bits.

A word is a whitespace-separated piece of the text as written ("discontent." with its full stop). A token belongs
to the word in which its first non-space byte lies; a token of spaces alone (a double space) belongs to the word
after it."""
from __future__ import annotations

import math
import re

import torch

from pipeline.lm import tokenizer
from pipeline.lm.model import GPT
from pipeline.lm.perplexity import token_logprobs


def word_spans(text: str) -> list[tuple[int, int]]:
    """[start, end) byte offsets, in the text's UTF-8, of each word of `text.split()`."""
    spans, at, done = [], 0, 0
    for m in re.finditer(r"\S+", text):
        at += len(text[done:m.start()].encode("utf-8"))
        end = at + len(m.group().encode("utf-8"))
        spans.append((at, end))
        at, done = end, m.end()
    return spans


def token_words(text: str, ids: list[int]) -> list[int]:
    """The index of the word each token belongs to."""
    spans, enc = word_spans(text), tokenizer.gpt2()
    owners, offset = [], 0
    for token in ids:
        piece = enc.decode_single_token_bytes(token)
        lead = len(piece) - len(piece.lstrip(b" \t\n\r\x0b\x0c"))
        at = offset + lead if lead < len(piece) else offset + len(piece)  # spaces only: the next word's
        owners.append(next((k for k, (_, end) in enumerate(spans) if at < end), len(spans) - 1))
        offset += len(piece)
    return owners


def word_surprisal(model: GPT, text: str, context: list[int]) -> list[float]:
    """Each word's surprisal in bits, given `context` (the sampling prompt's tokens; without one, the text's first
    token has nothing to condition on and adds nothing)."""
    ids = tokenizer.encode(text)
    if not ids:
        return []
    nats = torch.cat(token_logprobs(model, ids, context)).neg().tolist()
    bits = [0.0] * len(word_spans(text))
    for owner, value in zip(token_words(text, ids)[len(ids) - len(nats):], nats):
        bits[owner] += value / math.log(2)
    return bits
