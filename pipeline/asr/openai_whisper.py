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

    def transcribe(self, arrays: list[np.ndarray]) -> list[base.Decoded]:
        import torch

        decoders = [base.Decoder(lambda a, m=m: self._short(m, a), lambda a, m=m: self._long(m, a),
                                 reseed=lambda: torch.manual_seed(base.SAMPLING_SEED)) for m in self.models]
        return base.decode_each(arrays, decoders)


def bf16_weights(model, packed: bool | None = None) -> None:
    """Give `model`'s matmuls bf16 weights, cast once, for decoding under bf16 autocast.

    Autocast keeps no cast under torch.inference_mode, and none ever of a view, so whisper's modules would cast
    every weight at every call: at each decoding step all of the decoder's weights, and its unembedding, the
    transposed 51,865-row token embedding. For Whisper base that is a pass over 300 MB per token, where the
    token's arithmetic is about 100 MFLOP. Handed bf16 weights, autocast casts only the activations, and each
    matmul gets the same bf16 operands as before. The model then runs under bf16 autocast only. whisper.decode
    wants fp32 audio features: the encoder's output is widened.

    `packed` (by default, on a CPU where oneDNN runs bf16) hands oneDNN each weight once in its own blocked layout: a
    decoding step multiplies one row by each weight, and oneDNN would otherwise lay the weight out again at every
    call, which halves the rate of those products (the unembedding: 9.5 against 4.6 ms on one thread of a CPU
    with AVX-512 bf16; the encoder's 1500-row products gain 2-17%). The products are the same to the bit there,
    for every shape Whisper base multiplies. The encoder's attention: encoder_attention; the decoder, a step in one
    TorchScript call: pipeline/asr/_bf16_decoder.py."""
    import torch
    import torch.nn.functional as F
    import whisper

    from pipeline.asr._bf16_decoder import Bf16Decoder

    if packed is None:
        packed = (model.decoder.token_embedding.weight.device.type == "cpu" and torch.backends.mkldnn.is_available()
                  and torch.ops.mkldnn._is_mkldnn_bf16_supported())

    def cast(weight, bias):
        weight = weight.detach().to(torch.bfloat16)
        bias = None if bias is None else bias.detach().to(torch.bfloat16)
        return torch.ops.mkldnn._reorder_linear_weight(weight, 1) if packed else weight, bias

    def product(weight, bias):
        if not packed:
            return lambda x: F.linear(x, weight, bias)
        return lambda x: torch.ops.mkldnn._linear_pointwise(x.to(torch.bfloat16), weight, bias, "none", [], "")

    for m in model.encoder.modules():
        if isinstance(m, whisper.model.Linear):  # its own forward would cast the fp32 weight per call
            m.forward = product(*cast(m.weight, m.bias))
    for block in model.encoder.blocks:
        encoder_attention(block.attn)
    # whisper's encoder adds the positional embedding to its convolutions' output transposed, and the sum keeps
    # that layout through every residual add and LayerNorm after it: the same values laid out in order spare an
    # encoder of Whisper base about 15 ms of strided passes (541 against 556 ms on one thread of an AMD EPYC)
    model.encoder.blocks[0].register_forward_pre_hook(lambda _, args: (args[0].contiguous(), *args[1:]))
    model.encoder.forward = lambda mel, forward=model.encoder.forward: forward(mel).float()
    decoder = model.decoder
    unembedding, _ = cast(decoder.token_embedding.weight, None)
    decoder.forward = Bf16Decoder(decoder, lambda linear: cast(linear.weight, linear.bias), unembedding, packed)


def encoder_attention(attention) -> None:
    """whisper's own attention without SDPA (scaled products, an fp32 softmax rounded to bf16), a head at a time,
    its softmax in place.

    Over the encoder's 1500 positions, PyTorch's SDPA kernel in bf16 took 68-83 ms a layer on one thread of a CPU
    with AVX-512 bf16, more than half of the encoder. whisper's explicit path took 62: its softmax widens the 18 M
    scores into a 72 MB fp32 tensor and narrows the result again (29 ms against 17 in place). Here one head's
    scores (4.5 MB) go through PyTorch's softmax kernel in place, which widens each row into an fp32 buffer: the
    same fp32 softmax, each probability rounded to bf16 once. Its fp32 sum can differ from F.softmax's in the
    last bit, so a probability on a rounding tie can take the other neighbour (312 of one layer's 18 M). The
    encoder of Whisper base takes 650-700 ms against SDPA's 850-930."""
    import torch

    @torch.no_grad()  # out= arguments: bf16_weights' model decodes only, its weights detached
    def qkv_attention(q, k, v, mask=None):  # the encoder's: never a mask
        batch, positions, state = q.shape
        width = state // attention.n_head
        scale = width ** -0.25
        q, k = q * scale, k * scale
        out = torch.empty_like(q)
        scores = q.new_empty(batch, positions, k.shape[1])
        for h in range(attention.n_head):
            head = slice(h * width, (h + 1) * width)
            torch.bmm(q[..., head], k[..., head].transpose(1, 2), out=scores)
            torch.ops.aten._softmax.out(scores, -1, False, out=scores)
            out[..., head] = scores @ v[..., head]
        return out, None

    attention.qkv_attention = qkv_attention


# What a bf16 decode computes, in its transcripts' cache key: attention as whisper's explicit path does it (the
# decoder's in TorchScript, _bf16_decoder.py, to the bit), the encoder's a head at a time with its softmax in
# place. A change to that arithmetic changes this text, so no transcript of the other arithmetic is reused.
BF16_ARITHMETIC = "bf16: explicit attention, the encoder's softmax in place"

base.ENGINES.register("openai-whisper", OpenAIWhisper, model_family="whisper",
                      check=lambda name: sources.check_name("openai-whisper", name), resolve=sources.openai_whisper,
                      revision=lambda options: BF16_ARITHMETIC if options.compute_type == "bfloat16" else "")
