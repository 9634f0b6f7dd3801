"""The Recognizer interface and its registry.

Engines are named `engine:model` (`faster-whisper:base`, `openai-whisper:tiny.en`). Each engine is one
module in this package that calls `register`. A recognizer takes a list of 16 kHz float32 arrays and
returns one (text, details) per array.

The invariant every engine keeps: an utterance's transcript depends only on its own audio, the model and the
ASRConfig below. Each utterance is decoded alone, in its own Whisper window (or through long-form transcription
past 30 s), never batched or packed with its neighbours: padding, batch shape and the text of the audio next to
it can all change what Whisper writes (tests/test_invariance.py)."""
from __future__ import annotations

import os
import queue
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np

from pipeline.core.options import option
from pipeline.core.registry import Registry
from pipeline.core.source import Source
from pipeline.exec.malloc import tune_malloc
from pipeline.io.audio import N_SAMPLES

SAMPLING_SEED = 0  # temperature > 0 only: each utterance's sampler starts from this seed
DEFAULT_MAX_DECODERS = 8
DECODING = ("each utterance alone in its own window: 30 s, or max(10 s, length + 4 s) for faster-whisper-trim; "
            "long-form past 30 s; one thread per decode")
ENGINES = Registry(__package__, "asr.engines", "faster-whisper:base, openai-whisper:tiny.en", "speech_eval.engines",
                   ("base", "weights", "sources", "listener"))


@dataclass(frozen=True)
class ASRConfig:
    """The `asr` config section: which engines, and the decoding options that can change a transcript (every
    field not marked speed_only is in the transcript cache key)."""
    engines: list[str] = option(["faster-whisper:base"], "comma-separated engines, e.g. faster-whisper:base,"
                                "openai-whisper:tiny.en, faster-whisper:large-v3, faster-whisper:/path/to/ct2-model",
                                flag="--asr", check=ENGINES.check_all)
    language: str = option("en", "the spoken language, given to multilingual models (an English-only .en model "
                           "takes only en); several on the command line (zh,de) are a run each, then one table",
                           flag="--language")
    beam_size: int = option(1, "Whisper beam size (1 = greedy)", flag="--beam-size", at_least=1)
    temperature: float = option(0.0, "sampling temperature (0 = greedy; > 0 decodes one utterance at a time)",
                                at_least=0)
    condition_on_previous_text: bool = option(False, "long-form audio only: prompt each window with the last")
    compute_type: str = option("int8", "faster-whisper compute type (on a GPU int8 runs as int8_float16; float16 "
                               "and int8_float16 are GPU only); bfloat16: bf16 matmuls, for openai-whisper under bf16 "
                               "autocast (fast where the CPU has AVX-512 bf16 or AMX, or on a GPU), for faster-whisper "
                               "on CUDA GPUs of compute capability 8 and up only (the other types leave "
                               "openai-whisper in fp32 on a CPU, fp16 on a GPU)",
                               flag="--compute-type", choices=("int8", "float32", "float16", "int8_float16", "bfloat16"))
    batch_size: int = option(32, "utterances handed to a worker per call; each is still decoded alone",
                             at_least=1, speed_only=True)
    threads: int = option(0, "utterances transcribed at once, each on one thread; 0: one per core, at most 8",
                          at_least=0, speed_only=True)


# faster-whisper's mel features come from numpy, whose matrix products on several threads round otherwise: since
# they run on one thread (exec/workers.py one_blas_thread), its transcripts are keyed anew
FEATURES_ON_ONE_THREAD = "features: numpy BLAS on one thread"


@dataclass(frozen=True)
class Decoded:
    """What an engine made of one utterance."""
    text: str
    seconds: float  # wall time of this utterance's decode
    mode: str  # window (up to 30 s, one padded window) or long-form


class Recognizer(Protocol):
    name: str

    def transcribe(self, batch: list[np.ndarray]) -> list[Decoded]:
        """One Decoded per 16 kHz float32 array, in order."""



def resolve(name: str, options: ASRConfig, models_dir: str) -> Source:
    """Where the engine's model is (pipeline/asr/sources.py), before any work."""
    return ENGINES.resolve(name, options, models_dir)


def load(engine: str | Source, options: ASRConfig, models_dir: str, device: str = "cpu") -> Recognizer:
    tune_malloc()
    source = engine if isinstance(engine, Source) else resolve(engine, options, models_dir)
    return ENGINES.load(source, options, models_dir, device)


def compute_type(options: ASRConfig, device: str) -> str:
    """CTranslate2's compute type: int8 on a GPU keeps float16 activations (int8_float16)."""
    if device == "cuda":
        return {"int8": "int8_float16"}.get(options.compute_type, options.compute_type)
    return options.compute_type


def backend_settings() -> dict[str, str]:
    """The CTranslate2 settings given through the environment (CT2_USE_MKL, CT2_FORCE_CPU_ISA, ...): they choose
    other kernels, and other kernels round otherwise (measured on an AMD CPU: CT2_USE_MKL=1 changes 5 of 8 int8
    transcripts, bench/asr_speed.py --part ct2), so they belong in a transcript's key. CT2_VERBOSE, its logging,
    does not."""
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith("CT2_") and k != "CT2_VERBOSE"}


@dataclass(frozen=True)
class Decoder:
    """One copy of an engine that decodes one utterance at a time, on one thread."""
    short: Callable[[np.ndarray], str]  # audio up to 30 s: one padded window
    long: Callable[[np.ndarray], str]  # longer audio: the engine's long-form transcription
    reseed: Callable[[], object]  # resets the engine's sampler, for temperature > 0


def parallel_decoders(options: ASRConfig) -> int:
    """How many utterances are decoded at once. Each decode runs on a single thread, so its arithmetic, and so
    its transcript, is the same whatever the thread count; more cores mean more utterances at a time, up to
    DEFAULT_MAX_DECODERS unless `threads` asks for more (openai-whisper keeps a model copy per decoder).
    Sampling (temperature > 0) reseeds a process-wide generator before each utterance, so it goes one by one."""
    if options.temperature > 0:
        return 1
    return options.threads or min(os.cpu_count() or 1, DEFAULT_MAX_DECODERS)


def decode_each(arrays: list[np.ndarray], decoders: list[Decoder]) -> list[Decoded]:
    """Each utterance alone, on whichever decoder is free, results in input order."""
    free: queue.SimpleQueue[Decoder] = queue.SimpleQueue()
    for d in decoders:
        free.put(d)

    def one(audio: np.ndarray) -> Decoded:
        d = free.get()
        try:
            t0 = time.perf_counter()
            d.reseed()
            long = len(audio) > N_SAMPLES
            text = d.long(audio) if long else d.short(audio)
            return Decoded(text, time.perf_counter() - t0, "long-form" if long else "window")
        finally:
            free.put(d)

    if len(decoders) == 1:
        return [one(a) for a in arrays]
    pool = ThreadPoolExecutor(len(decoders))
    try:
        return list(pool.map(one, arrays))
    finally:  # after an interrupt, the decodes in flight are abandoned, not waited for
        pool.shutdown(wait=False, cancel_futures=True)
