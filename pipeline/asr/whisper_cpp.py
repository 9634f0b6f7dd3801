"""whisper.cpp through pywhispercpp: `whisper-cpp:base`, `whisper-cpp:/path/ggml-large-v3-turbo.bin`.

A ggml file is used as it is. Any other model openai-whisper would run (the bundled base and tiny.en, a `.pt`, a
CTranslate2 folder, the caches) goes through openai-whisper's checkpoint and is converted once to ggml by our
own writer (pipeline/asr/_ggml.py) into models/whisper/, named by the checkpoint's sha256.

Each utterance is decoded alone in its full 30 s window, as our other engines do: greedy (beam search with
--beam-size), the language as set, no timestamps, no context, one temperature with no fallback. Each decode runs
on one whisper.cpp thread, in a context of its own, so that the thread count never reaches the arithmetic;
contexts decode side by side (pywhispercpp releases the GIL while whisper.cpp runs). Longer audio goes through
whisper.cpp's own long-form transcription. whisper.cpp's `audio_ctx` trimming changes transcripts, so it is not
used here."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from pipeline.asr import _ggml, base, sources, weights
from pipeline.core.source import Source
from pipeline.errors import ConfigError


def ggml_file(source: Source, models_dir: str) -> Path:
    path = Path(source.path)
    if path.suffix == ".bin":
        return path
    if path.is_dir():
        path = weights.openai_checkpoint(path, models_dir)
    return _ggml.converted(path, models_dir)


class WhisperCpp:
    def __init__(self, source: Source, options: base.ASRConfig, models_dir: str, device: str = "cpu"):
        from pywhispercpp.model import Model

        self.name, self.options = source.spec, options
        path = ggml_file(source, models_dir)
        beam = options.beam_size > 1
        settings = dict(n_threads=1, language=options.language, translate=False, no_timestamps=True,
                        no_context=True, print_progress=False, print_realtime=False, print_timestamps=False,
                        temperature=options.temperature, temperature_inc=0.0, suppress_blank=True,
                        beam_search={"beam_size": options.beam_size, "patience": -1.0} if beam else
                        {"beam_size": -1, "patience": -1.0})
        self.contexts = [Model(str(path), params_sampling_strategy=1 if beam else 0,
                               redirect_whispercpp_logs_to=None, **settings)
                         for _ in range(base.parallel_decoders(options))]

    def _decode(self, model, audio: np.ndarray, long: bool) -> str:
        segments = model.transcribe(np.ascontiguousarray(audio, dtype=np.float32), single_segment=not long,
                                    no_context=not (long and self.options.condition_on_previous_text))
        return "".join(s.text for s in segments).strip()

    def transcribe(self, arrays: list[np.ndarray]) -> list[base.Decoded]:
        decoders = [base.Decoder(lambda a, m=m: self._decode(m, a, False), lambda a, m=m: self._decode(m, a, True),
                                 reseed=lambda: None) for m in self.contexts]
        return base.decode_each(arrays, decoders)


def resolve(spec: str, options, models_dir: str) -> Source:
    """A ggml file by path, checked at once; otherwise the model openai-whisper would run, converted on load."""
    name = spec.partition(":")[2]
    path = sources.as_path(name)
    if path is not None and path.suffix == ".bin":
        if not path.is_file():
            raise ConfigError(f"asr.engines: {spec}: no such file; give the path of a whisper.cpp model (ggml-*.bin)")
        try:
            multilingual = _ggml.check(path)["n_vocab"] >= 51865
        except _ggml.NotGgml as e:
            raise ConfigError(f"asr.engines: {spec}: {e}") from None
        return sources.check_language(Source(spec=spec, found="path (ggml)", path=str(path), files=(str(path),),
                                             multilingual=multilingual), options.language)
    return sources.openai_whisper(spec, options, models_dir)


def check_name(name: str) -> None:
    if not name.endswith(".bin"):
        sources.check_name("openai-whisper", name)


base.ENGINES.register("whisper-cpp", WhisperCpp, model_family="whisper", check=check_name, resolve=resolve,
                      revision=lambda options: f"ggml writer r{_ggml.REVISION}")
