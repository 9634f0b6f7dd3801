"""openai-whisper on its own checkpoint, or on one converted from CTranslate2 weights (see weights.py); where
the model is found: pipeline/asr/sources.py.

An utterance up to 30 s is decoded alone with whisper.decode on its padded window; longer audio with whisper's
transcribe() and the same options. Each decode runs on one torch thread, so utterances are decoded in parallel
on copies of the model: whisper.decode installs its key-value cache hooks on the model it is given, so two
decodes must never share one. On a GPU one model decodes one utterance at a time, in float16."""
from __future__ import annotations

import copy
import logging
from pathlib import Path

import numpy as np

from pipeline.asr import base, sources, weights
from pipeline.core.source import Source
from pipeline.exec.device import software_bf16

log = logging.getLogger(__name__)


class OpenAIWhisper:
    def __init__(self, source: Source, options: base.ASRConfig, models_dir: str, device: str = "cpu"):
        import torch
        import whisper

        self.name = source.spec
        self.options, self.device = options, device
        if device == "cpu":
            torch.set_num_threads(1)  # see base.parallel_decoders: one thread per decode, decodes side by side
        path = Path(source.path)
        if path.is_dir():  # a CTranslate2 model: converted once, kept in models/whisper/
            path = weights.openai_checkpoint(path, models_dir)
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
        first = whisper.model.Whisper(whisper.model.ModelDimensions(**ckpt["dims"]))
        first.load_state_dict(ckpt["model_state_dict"])
        first.eval()
        first.to(device)
        copies = base.parallel_decoders(options) - 1 if device == "cpu" else 0
        self.models = [first] + [copy.deepcopy(first) for _ in range(copies)]
        if options.compute_type == "bfloat16":
            for m in self.models:
                bf16_weights(m)
            if why := software_bf16(device, models_dir):
                log.warning("%s, compute type bfloat16: %s, so each decode takes several times as long as in "
                            "float32; the transcripts are bf16's all the same", self.name, why)
        self.whisper = whisper
        self.bf16 = options.compute_type == "bfloat16"  # bf16 autocast: its matmuls in bf16, in the transcript key
        self.fp16 = device == "cuda" and not self.bf16
        self.decode_options = whisper.DecodingOptions(
            language=options.language, without_timestamps=True, fp16=self.fp16, temperature=options.temperature,
            beam_size=options.beam_size if options.beam_size > 1 else None)

    def _short(self, model, audio: np.ndarray) -> str:
        import torch

        w = self.whisper
        mel = w.log_mel_spectrogram(w.pad_or_trim(torch.from_numpy(audio).to(self.device)), model.dims.n_mels)
        with torch.inference_mode(), torch.autocast(self.device, dtype=torch.bfloat16, enabled=self.bf16):
            result = w.decode(model, mel, self.decode_options)
        return result.text.strip()

    def _long(self, model, audio: np.ndarray) -> str:
        import torch

        with torch.autocast(self.device, dtype=torch.bfloat16, enabled=self.bf16):
            result = model.transcribe(
                audio, language=self.options.language, beam_size=self.decode_options.beam_size,
                temperature=self.options.temperature, fp16=self.fp16, verbose=None,
                condition_on_previous_text=self.options.condition_on_previous_text)
        return result["text"].strip()

    def transcribe(self, arrays: list[np.ndarray]) -> list[tuple[str, dict]]:
        import torch

        decoders = [base.Decoder(lambda a, m=m: self._short(m, a), lambda a, m=m: self._long(m, a),
                                 reseed=lambda: torch.manual_seed(base.SAMPLING_SEED)) for m in self.models]
        return base.decode_each(arrays, decoders)


def bf16_weights(model) -> None:
    """Give `model`'s matmuls bf16 weights, cast once, for decoding under bf16 autocast.

    Autocast keeps no cast under torch.inference_mode, and none ever of a view, so whisper's modules would cast
    every weight at every call: at each decoding step all of the decoder's weights, and its unembedding, the
    transposed 51,865-row token embedding. For Whisper base that is a pass over 300 MB per token, where the
    token's arithmetic is about 100 MFLOP. Handed bf16 weights, autocast casts only the activations, and each
    matmul gets the same bf16 operands as before, so every logit is the same to the bit (tested). The model then
    runs under bf16 autocast only. whisper.decode wants fp32 audio features: the encoder's output is widened."""
    import torch
    import torch.nn.functional as F
    import whisper

    for m in model.modules():
        if isinstance(m, whisper.model.Linear):  # its own forward would cast the fp32 weight per call
            weight = m.weight.detach().to(torch.bfloat16)
            bias = None if m.bias is None else m.bias.detach().to(torch.bfloat16)
            m.forward = lambda x, weight=weight, bias=bias: F.linear(x, weight, bias)
    model.encoder.forward = lambda mel, forward=model.encoder.forward: forward(mel).float()
    decoder = model.decoder
    unembedding = decoder.token_embedding.weight.detach().to(torch.bfloat16).t()

    def decoder_forward(x, xa, kv_cache=None):  # TextDecoder.forward of openai-whisper 20250625, but the last line
        offset = next(iter(kv_cache.values())).shape[1] if kv_cache else 0
        x = decoder.token_embedding(x) + decoder.positional_embedding[offset:offset + x.shape[-1]]
        x = x.to(xa.dtype)
        for block in decoder.blocks:
            x = block(x, xa, mask=decoder.mask, kv_cache=kv_cache)
        return (decoder.ln(x) @ unembedding).float()

    decoder.forward = decoder_forward


base.ENGINES.register("openai-whisper", OpenAIWhisper, model_family="whisper",
                      check=lambda name: sources.check_name("openai-whisper", name), resolve=sources.openai_whisper)
