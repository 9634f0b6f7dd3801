"""faster-whisper (CTranslate2) on the bundled weights.

Utterances up to 30 s go straight through CTranslate2's generate(), batched: by default packed several to a
window with timestamps (base.run_packed), or one per window with `speech.pack = false`. Longer audio goes
through faster-whisper's own long-form transcribe()."""
from __future__ import annotations

import numpy as np

from pipeline.asr import base, weights


class FasterWhisper:
    def __init__(self, model: str, options: base.Options):
        import ctranslate2
        from faster_whisper import WhisperModel
        from faster_whisper.tokenizer import Tokenizer

        self.name = f"faster-whisper:{model}"
        self.options = options
        path = weights.ct2_dir(model, options.models_dir)
        self._files = [str(path / "model.bin")]
        self.model = WhisperModel(str(path), device="cpu", compute_type=options.compute_type,
                                  cpu_threads=options.threads)
        language = options.language if self.model.model.is_multilingual else None
        self.tokenizer = Tokenizer(self.model.hf_tokenizer, self.model.model.is_multilingual,
                                   task="transcribe", language=language)
        self.prompt = list(self.tokenizer.sot_sequence) + [self.tokenizer.no_timestamps]
        self.timestamp_prompt = list(self.tokenizer.sot_sequence)
        self._storage = ctranslate2.StorageView.from_array

    def files(self) -> list[str]:
        return self._files

    def features(self, audio: np.ndarray) -> np.ndarray:
        padded = np.zeros(base.WINDOW_SAMPLES, dtype=np.float32)
        padded[:len(audio)] = audio
        return self.model.feature_extractor(padded)[:, :3000]

    def _generate(self, batch: list[np.ndarray], prompt: list[int], **kwargs) -> list[list[int]]:
        feats = self._storage(np.ascontiguousarray(np.stack([self.features(a) for a in batch])))
        sampling = {"sampling_temperature": self.options.temperature, "sampling_topk": 0} \
            if self.options.temperature > 0 else {}
        results = self.model.model.generate(
            feats, [prompt] * len(batch), beam_size=self.options.beam_size, max_length=448,
            suppress_blank=True, suppress_tokens=[-1], **sampling, **kwargs)
        return [r.sequences_ids[0] for r in results]

    def _short(self, batch: list[np.ndarray]) -> list[str]:
        return [self.tokenizer.decode(ids).strip() for ids in self._generate(batch, self.prompt)]

    def _segments(self, windows: list[np.ndarray]) -> list[list[base.Segment]]:
        """Decode with timestamps; every timestamp token closes the text before it."""
        begin = self.tokenizer.timestamp_begin
        out = []
        for ids in self._generate(windows, self.timestamp_prompt, max_initial_timestamp_index=50):
            segments, text, start = [], [], 0.0
            for t in ids:
                if t >= begin:
                    stamp = (t - begin) * 0.02
                    if text:
                        segments.append((start, stamp, self.tokenizer.decode(text)))
                        text = []
                    start = stamp
                else:
                    text.append(t)
            if text:
                segments.append((start, 30.0, self.tokenizer.decode(text)))
            out.append(segments)
        return out

    def _long(self, audio: np.ndarray) -> str:
        segments, _ = self.model.transcribe(
            audio, language=self.options.language, beam_size=self.options.beam_size,
            temperature=self.options.temperature, without_timestamps=False,
            condition_on_previous_text=self.options.condition_on_previous_text, vad_filter=False)
        return " ".join(s.text.strip() for s in segments).strip()

    def transcribe(self, batch: list[np.ndarray]) -> list[tuple[str, dict]]:
        if self.options.pack:
            return base.run_packed(batch, self._segments, self._short, self._long)
        return base.run_batches(batch, base.UTTERANCES_PER_BATCH, self._short, self._long)


base.register("faster-whisper", FasterWhisper, weights.MODELS)
