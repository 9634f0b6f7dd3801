"""The `sentences` artifact, as every source writes it: each text with its GPT-2 token count and, when a trained
LM exists, its perplexity and each word's surprisal (conditioned on the sampling prompt), plus the LM's
perplexity of fixed reference sentences as a yardstick."""
from __future__ import annotations

import logging
from pathlib import Path

from dataclasses import dataclass

from pipeline.core import records
from pipeline.core.records import joined, lm_only


log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class Sentence:
    sentence_id: str  # stable across reruns: s<sample>-<n> (LM), l<line> (a sentences file), or the manifest id
    sample: int | None  # which LM sample it was cut from
    text: str  # the reference, as written
    lm_tokens: int  # GPT-2 tokens in the text
    perplexity: float | None = lm_only()  # the LM's perplexity of the text, given the sampling prompt
    word_surprisal: list[float] = joined(float, "{:.4f}", lm=True)  # each word of text.split(): its tokens'
    # −log₂ p summed (bits, 4 decimals), given the prompt and the text before it (lm/surprisal.py)


def write(out: Path, yardstick: Path, lm_dir: Path | None, texts: list[tuple[str, int | None, str]], *,
          device: str, prompt: str, warn_without_lm: bool = True) -> int:
    """texts: (sentence id, LM sample or None, text), written to `out` (sentences.csv), each scored given the
    sampling prompt, and with an LM the reference sentences to `yardstick`. Returns how many sentences were
    written. Without an LM, the perplexity and surprisal are left empty, with a warning where the user may have
    expected them."""
    from pipeline.lm import tokenizer

    model = None
    if lm_dir:  # torch is imported only to score: a run of recordings without an LM starts 3 s sooner
        from pipeline.lm.trainer import load_model

        model = load_model(lm_dir / "ckpt.pt", device)
    if model is None and warn_without_lm:
        log.warning("perplexity and surprisal are left empty: no intact LM trained with this config's model and "
                    "train settings (`python run_pipeline.py --stages prepare,train`, with the same settings, trains "
                    "one)")
    start_ids = tokenizer.encode(prompt)

    def scored(sentence_id: str, sample: int | None, text: str) -> Sentence:
        ids = tokenizer.encode(text)
        if model is None:
            return Sentence(sentence_id=sentence_id, sample=sample, text=text, lm_tokens=len(ids), perplexity=None)
        from pipeline.lm.perplexity import perplexity
        from pipeline.lm.surprisal import word_surprisal

        ppl = round(perplexity(model, ids, context=start_ids), 4) if ids else None
        bits = word_surprisal(model, text, start_ids)
        return Sentence(sentence_id=sentence_id, sample=sample, text=text, lm_tokens=len(ids), perplexity=ppl,
                        word_surprisal=[float(f"{b:.4f}") for b in bits])

    records.write_csv(out, Sentence, [scored(*t) for t in texts])
    if model is not None:
        from pipeline.lm.sampler import REFERENCE_SENTENCES

        records.write_csv(yardstick, Sentence,
                          [scored(name, None, text) for name, text in REFERENCE_SENTENCES.items()])
    return len(texts)
