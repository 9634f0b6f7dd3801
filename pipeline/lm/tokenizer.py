"""GPT-2 BPE, fully offline.

`tiktoken.get_encoding("gpt2")` downloads its ranks. openai-whisper ships the same file
(`whisper/assets/gpt2.tiktoken`, sha256 = tiktoken's r50k_base), so the encoding is built from it."""
from __future__ import annotations

import functools
from importlib.util import find_spec
from pathlib import Path

import tiktoken
from tiktoken.load import load_tiktoken_bpe
from tiktoken_ext.openai_public import r50k_pat_str

R50K_SHA256 = "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"
EOT = 50256


def ranks_path() -> Path:
    spec = find_spec("whisper")
    if spec is None or spec.origin is None:
        raise RuntimeError("GPT-2 BPE ranks come from openai-whisper's assets; run scripts/setup to install it")
    return Path(spec.origin).parent / "assets" / "gpt2.tiktoken"


@functools.cache
def gpt2() -> tiktoken.Encoding:
    """The GPT-2 (r50k_base) encoding, with `<|endoftext|>` = 50256."""
    ranks = load_tiktoken_bpe(str(ranks_path()), expected_hash=R50K_SHA256)
    return tiktoken.Encoding(name="gpt2", pat_str=r50k_pat_str, mergeable_ranks=ranks,
                             special_tokens={"<|endoftext|>": EOT}, explicit_n_vocab=50257)


def encode(text: str) -> list[int]:
    return gpt2().encode_ordinary(text)


def decode(ids: list[int]) -> str:
    return gpt2().decode(ids)
