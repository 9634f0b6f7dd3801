"""PocketSphinx (CMU Sphinx: HMM acoustic model, n-gram language model), a second ASR family: `pocketsphinx:en-us`.

PyPI `pocketsphinx` 5 ships its US English acoustic model, language model and pronouncing dictionary inside the
wheel, so it runs offline like the bundled Whisper weights. Its errors are phonetic where Whisper's are lexical,
which is what lets the report tell an error of the voice from an error of one ASR family.

A decoder carries state from one utterance to the next, beyond its cepstral mean (measured: "My lord, I will go"
heard as "by war i will go" alone and as "my war i will go" after another line, with the mean reset and dither
off), so every utterance is decoded by a decoder re-initialised from the model files: its transcript depends on
its own 16 kHz int16 audio and nothing else, as every engine's must. That costs half a second an utterance."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from pipeline.asr import base
from pipeline.core.source import Source
from pipeline.errors import ConfigError

MODELS = ("en-us",)
INSTALL = "pip install pocketsphinx==5.1.1 (scripts/setup installs it)"


def model_dir() -> Path:
    try:
        from pocketsphinx import get_model_path
    except ImportError:
        raise ConfigError(f"pocketsphinx:en-us needs PocketSphinx: {INSTALL}") from None
    return Path(get_model_path()) / "en-us"


def resolve(spec: str, options: base.ASRConfig, models_dir: str) -> Source:
    if options.language != "en":
        raise ConfigError(f"asr.language = {options.language!r}: {spec} is a US English model; use --language en")
    root = model_dir()
    files = tuple(str(p) for p in sorted(root.rglob("*")) if p.is_file())
    return Source(spec=spec, found="package", path=str(root), files=files, repo="pocketsphinx", multilingual=False)


class PocketSphinx:
    def __init__(self, source: Source, options: base.ASRConfig, models_dir: str, device: str = "cpu"):
        from pocketsphinx import Decoder

        self.name = source.spec
        root = Path(source.path)
        self.settings = dict(hmm=str(root / "en-us"), lm=str(root / "en-us.lm.bin"),
                             dict=str(root / "cmudict-en-us.dict"), samprate=16000, loglevel="FATAL")
        self.decoders = [Decoder(**self.settings) for _ in range(base.parallel_decoders(options))]

    def _decode(self, decoder, audio: np.ndarray) -> str:
        decoder.reinit()  # back to the state the model files give, whatever came before
        pcm = (np.clip(audio, -1.0, 1.0) * 32767).astype("<i2").tobytes()
        decoder.start_utt()
        decoder.process_raw(pcm, full_utt=True)
        decoder.end_utt()
        hyp = decoder.hyp()
        return hyp.hypstr.strip() if hyp else ""

    def transcribe(self, arrays: list[np.ndarray]) -> list[base.Decoded]:
        decoders = [base.Decoder(short=lambda a, d=d: self._decode(d, a), long=lambda a, d=d: self._decode(d, a),
                                 reseed=lambda: None) for d in self.decoders]
        return base.decode_each(arrays, decoders)


base.ENGINES.register("pocketsphinx", PocketSphinx, names=MODELS, resolve=resolve)
