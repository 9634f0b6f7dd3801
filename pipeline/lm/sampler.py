"""Sample text from the trained GPT and cut it into speakable sentences."""
from __future__ import annotations

import re

import torch

from pipeline.lm import tokenizer
from pipeline.lm.config import SampleConfig
from pipeline.lm.model import GPT

SPEAKER_TAG = re.compile(r"^\s*([A-Z][A-Za-z'.-]*(?: [A-Za-z'.-]+){0,3}):\s*$")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
UNSPEAKABLE = re.compile(r"[^\w\s'.,;:!?-]")  # brackets, quotes, stars and such say nothing

# PA6a scores three Shakespeare quotes, a grammatical nonsense line and a random string. These are ours:
# the quotes are famous lines, the nonsense keeps PA6a's "purple toaster" idea.
REFERENCE_SENTENCES = {
    "quote_hamlet": "To be, or not to be, that is the question.",
    "quote_as_you_like_it": "All the world's a stage, and all the men and women merely players.",
    "quote_richard_iii": "Now is the winter of our discontent made glorious summer by this sun of York.",
    "nonsense_grammatical": "The purple toaster gallops quietly over the sleeping arithmetic.",
    "random_letters": "kzvtr qwam plix vorn dreb snu gax.",
}


def generate(model: GPT, options: SampleConfig) -> list[str]:
    """PA6a's sampling loop: each sample continues the prompt (`options.start`) for max_new_tokens tokens."""
    device = model.head.weight.device
    gen = torch.Generator(device=device).manual_seed(options.seed)
    start_ids = tokenizer.encode(options.start)
    samples = []
    for _ in range(options.num_samples):
        idx = torch.tensor([start_ids], dtype=torch.long, device=device)
        out = model.generate(idx, options.max_new_tokens, temperature=options.temperature, top_k=options.top_k,
                             generator=gen)
        samples.append(tokenizer.decode(out[0, len(start_ids):].tolist()))
    return samples


def split_sentences(sample: str, speaker_tags: str = "drop", min_words: int = 3) -> list[str]:
    """Speakable sentences from one sample.

    - A line that is only a speaker tag ("BUCKINGHAM:") is dropped, or with speaker_tags="keep" it is
      kept as the start of the next sentence.
    - Lines are joined, then split after '.', '!' or '?'.
    - Characters no voice can say (brackets, quotes, '*', '_') are removed; whitespace is collapsed.
    - The last piece is dropped when it lacks final punctuation (sampling stopped mid-sentence there),
      unless it is the only piece: an undertrained model may never end a sentence, and its text is still
      worth speaking.
    - Pieces with fewer than min_words words are dropped.
    """
    kept_lines = []
    for line in sample.splitlines():
        if SPEAKER_TAG.match(line) and speaker_tags == "drop":
            continue
        kept_lines.append(line.strip())
    text = " ".join(line for line in kept_lines if line)
    text = re.sub(r"\s+", " ", UNSPEAKABLE.sub(" ", text)).strip()
    pieces = [p.strip() for p in SENTENCE_END.split(text) if p.strip()]
    if len(pieces) > 1 and not pieces[-1].endswith((".", "!", "?")):
        pieces = pieces[:-1]
    return [p for p in pieces if len(re.findall(r"[A-Za-z]+", p)) >= min_words]
