"""faster-whisper (CTranslate2) on any CTranslate2 Whisper model (found by pipeline/asr/sources.py).

An utterance up to 30 s goes straight through CTranslate2's generate(), alone in its padded window, with
faster-whisper's own feature extractor and prompt; longer audio goes through faster-whisper's long-form
transcribe() with the same options."""
from __future__ import annotations

import numpy as np

from pipeline.asr import base, sources
from pipeline.core.source import Source
from pipeline.io.audio import HOP_LENGTH, N_SAMPLES


class FasterWhisper:
    def __init__(self, source: Source, options: base.ASRConfig, models_dir: str, device: str = "cpu"):
        import ctranslate2
        from faster_whisper import WhisperModel
        from faster_whisper.tokenizer import Tokenizer

        self.name = source.spec
        self.options = options
        path = source.path
        self.workers = base.parallel_decoders(options) if device == "cpu" else 1
        try:
            self.model = WhisperModel(str(path), device=device, compute_type=base.compute_type(options, device),
                                      cpu_threads=1, num_workers=self.workers)
        except ValueError as e:  # a compute type this machine cannot run: bfloat16 on every CPU
            supported = ", ".join(sorted(ctranslate2.get_supported_compute_types(device)))
            model = source.spec.split(":", 1)[1]
            bf16 = (f"; for bf16 on a CPU, use --asr openai-whisper:{model}"
                    if options.compute_type == "bfloat16" and device == "cpu" else "")
            raise ValueError(f"--compute-type {options.compute_type} cannot run on this {device} ({e}); it runs "
                             f"{supported}{bf16}") from None
        language = options.language if self.model.model.is_multilingual else None
        self.tokenizer = Tokenizer(self.model.hf_tokenizer, self.model.model.is_multilingual,
                                   task="transcribe", language=language)
        self.prompt = list(self.tokenizer.sot_sequence) + [self.tokenizer.no_timestamps]
        self._storage = ctranslate2.StorageView.from_array
        self._ctranslate2 = ctranslate2

    def features(self, audio: np.ndarray, window: int = N_SAMPLES) -> np.ndarray:
        """Log-mel frames of `audio` zero-padded to `window` samples (30 s unless trimmed)."""
        padded = np.zeros(window, dtype=np.float32)
        padded[:len(audio)] = audio
        return self.model.feature_extractor(padded)[:, :window // HOP_LENGTH]

    def _short(self, audio: np.ndarray) -> str:
        return self.decode_features(self.features(audio))

    def decode_features(self, features: np.ndarray) -> str:
        feats = self._storage(np.ascontiguousarray(features[None]))
        sampling = {"sampling_temperature": self.options.temperature, "sampling_topk": 0} \
            if self.options.temperature > 0 else {}
        result, = self.model.model.generate(
            feats, [self.prompt], beam_size=self.options.beam_size, max_length=448,
            suppress_blank=True, suppress_tokens=[-1], **sampling)
        return self.tokenizer.decode(result.sequences_ids[0]).strip()

    def _long(self, audio: np.ndarray) -> str:
        segments, _ = self.model.transcribe(
            audio, language=self.options.language, beam_size=self.options.beam_size,
            temperature=self.options.temperature, without_timestamps=False,
            condition_on_previous_text=self.options.condition_on_previous_text, vad_filter=False)
        return " ".join(s.text.strip() for s in segments).strip()

    def transcribe(self, arrays: list[np.ndarray]) -> list[base.Decoded]:
        # One model with `workers` CTranslate2 replicas: concurrent calls run on separate one-thread workers.
        decoder = base.Decoder(self._short, self._long,
                               reseed=lambda: self._ctranslate2.set_random_seed(base.SAMPLING_SEED))
        return base.decode_each(arrays, [decoder] * self.workers)


base.ENGINES.register("faster-whisper", FasterWhisper, model_family="whisper",
                      check=lambda name: sources.check_name("faster-whisper", name), resolve=sources.faster_whisper,
                      revision=lambda options: base.FEATURES_ON_ONE_THREAD)
