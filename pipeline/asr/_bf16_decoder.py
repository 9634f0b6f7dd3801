"""openai-whisper's text decoder on the weights bf16_weights cast (pipeline/asr/openai_whisper.py), each of its
forward passes in one TorchScript call.

A decoding step of Whisper base makes about 400 operator calls, most of them on one token. Made from Python, each
call takes the GIL, and the pipeline decodes utterances side by side on threads of one process: a small product and
three casts took 63 µs a loop on one thread of a 2-core AMD EPYC, and 106 µs on each of two threads at once. In
TorchScript, whose interpreter holds no GIL, they took 39 µs on each of two. Decoding 8 utterances' audio features
with whisper.decode on each of two threads took 397-467 ms an utterance through whisper's modules and 309-356 in
TorchScript (1 thread: 325-371 and 292-339).

The operators are whisper's under bf16 autocast, on the same operands (its explicit attention, as under
disable_sdpa), so the logits are the same to the bit (tests/test_asr.py). whisper.decode is left as it is: the
key-value cache stays its dict, filled in the order its hooks would fill it."""
from __future__ import annotations

import warnings
from typing import List, Optional

import torch
from torch import Tensor


def _linear(x: Tensor, w: Tensor, b: Optional[Tensor], packed: bool) -> Tensor:
    """A bf16 product as bf16_weights' own (autocast casts the input to bf16 likewise)."""
    x = x.to(torch.bfloat16)
    if packed:  # w is laid out for oneDNN
        return torch.ops.mkldnn._linear_pointwise(x, w, b, "none", [], "")
    return torch.nn.functional.linear(x, w, b)


def _heads(z: Tensor, n_head: int) -> Tensor:
    """(batch, positions, state) -> (batch, heads, positions, state / heads)"""
    return z.view(z.shape[0], z.shape[1], n_head, -1).permute(0, 2, 1, 3)


def _keys(k: Tensor, v: Tensor, n_head: int) -> List[Tensor]:
    """Keys scaled and laid out for the product with the queries, and values by head, as whisper's explicit path
    lays them out at each call. The cross-attention's are laid out once per decode (Bf16Decoder._cross)."""
    scale = float(k.shape[-1] // n_head) ** -0.25
    return [(_heads(k, n_head) * scale).transpose(-1, -2).contiguous(), _heads(v, n_head).contiguous()]


def _attend(q: Tensor, keys: Tensor, values: Tensor, n_head: int, mask: Optional[Tensor]) -> Tensor:
    """whisper's explicit attention (disable_sdpa): scaled products, the mask, an fp32 softmax rounded to bf16."""
    scale = float(q.shape[-1] // n_head) ** -0.25
    qk = torch.matmul(_heads(q, n_head) * scale, keys)
    if mask is not None:
        qk = qk + mask[:q.shape[1], :q.shape[1]]
    probabilities = torch.softmax(qk.float(), dim=-1).to(q.dtype)
    return torch.matmul(probabilities, values).permute(0, 2, 1, 3).flatten(start_dim=2)


def _layer_norm(x: Tensor, w: Tensor, b: Tensor, eps: float) -> Tensor:
    """whisper's LayerNorm: in fp32, back in the input's dtype."""
    return torch.layer_norm(x.float(), [x.shape[-1]], w, b, eps).to(x.dtype)


def _cross_keys(xa: Tensor, params: List[Tensor], n_layer: int, packed: bool) -> List[Tensor]:
    """Each layer's cross-attention key and value of the audio features, as whisper's hooks keep them."""
    out: List[Tensor] = []
    for i in range(n_layer):
        p = params[24 * i:24 * (i + 1)]
        out.extend([_linear(xa, p[13], None, packed), _linear(xa, p[14], p[15], packed)])
    return out


def _step(x: Tensor, params: List[Tensor], cached: List[Tensor], cross: List[Tensor], mask: Tensor,
          n_head: int, eps: float, packed: bool) -> List[Tensor]:
    """One call of TextDecoder.forward after the embedding. `params` holds 24 tensors a layer: the self-attention's
    LayerNorm (weight, bias), query (weight, bias), key (weight), value and out (weight, bias each); the
    cross-attention's likewise; the MLP's LayerNorm, then its two products (weight, bias each). Then the final
    LayerNorm's weight and bias and the unembedding. `cached` holds each layer's self-attention key and value so far
    (empty on the first call), `cross` each layer's prepared cross-attention keys and values. Returns the logits in
    fp32, then each layer's self-attention key and value with this call's appended."""
    kept: List[Tensor] = []
    n_layer = len(cross) // 2
    for i in range(n_layer):
        p = params[24 * i:24 * (i + 1)]
        h = _layer_norm(x, p[0], p[1], eps)
        q = _linear(h, p[2], p[3], packed)
        k = _linear(h, p[4], None, packed)
        v = _linear(h, p[5], p[6], packed)
        if len(cached) > 0:
            k = torch.cat([cached[2 * i], k], dim=1)
            v = torch.cat([cached[2 * i + 1], v], dim=1)
        kept.extend([k, v])
        keys = _keys(k, v, n_head)
        x = x + _linear(_attend(q, keys[0], keys[1], n_head, mask), p[7], p[8], packed)
        h = _layer_norm(x, p[9], p[10], eps)
        q = _linear(h, p[11], p[12], packed)
        x = x + _linear(_attend(q, cross[2 * i], cross[2 * i + 1], n_head, None), p[16], p[17], packed)
        h = _layer_norm(x, p[18], p[19], eps)
        h = torch.nn.functional.gelu(_linear(h, p[20], p[21], packed))
        x = x + _linear(h, p[22], p[23], packed)
    x = _layer_norm(x, params[-3], params[-2], eps)
    return [_linear(x, params[-1], None, packed).float()] + kept


with warnings.catch_warnings():  # torch.jit.script is deprecated; torch is pinned (scripts/setup)
    warnings.simplefilter("ignore", DeprecationWarning)
    _step_script = torch.jit.script(_step)
    _cross_script = torch.jit.script(_cross_keys)


class Bf16Decoder:
    """TextDecoder.forward of openai-whisper 20250625, for bf16 autocast: `product_weights` gives a Linear's weight
    and bias as bf16_weights cast (and laid out for oneDNN, if `packed`) them, `unembedding` the token embedding's."""

    def __init__(self, decoder, product_weights, unembedding: Tensor, packed: bool):
        self.decoder, self.packed = decoder, packed
        self.params: List[Tensor] = []
        for block in decoder.blocks:
            a, c = block.attn, block.cross_attn
            for ln, linears in ((block.attn_ln, (a.query, a.key, a.value, a.out)),
                                (block.cross_attn_ln, (c.query, c.key, c.value, c.out)),
                                (block.mlp_ln, (block.mlp[0], block.mlp[2]))):
                self.params += [ln.weight.detach(), ln.bias.detach()]
                for linear in linears:
                    w, b = product_weights(linear)
                    self.params += [w] if b is None else [w, b]
            assert len(self.params) % 24 == 0, "whisper's keys have no bias, every other product has one"
        self.params += [decoder.ln.weight.detach(), decoder.ln.bias.detach(), unembedding]
        self.eps = decoder.ln.eps
        self.n_head = decoder.blocks[0].attn.n_head
        # the cache's keys: the modules whose outputs whisper's hooks would keep, in the order they would keep them
        self.selves = [m for b in decoder.blocks for m in (b.attn.key, b.attn.value)]
        self.crosses = [m for b in decoder.blocks for m in (b.cross_attn.key, b.cross_attn.value)]
        self.prepared: tuple[list, list] = ([], [])  # (the cross keys and values they came from, prepared)

    def _cross(self, xa: Tensor, kv_cache: dict | None) -> list[Tensor]:
        """The cross-attention's keys and values, from the cache once it holds them, laid out once per decode: a
        step asks one query of the 1500 audio positions, and laying out 1.5 MB of keys and values a layer again at
        every step (as whisper's explicit path does) costs more than the products. The cache hands back the same
        tensors at every step of a decode; another decode's are other tensors."""
        if kv_cache is not None and self.crosses[0] in kv_cache:
            raw = [kv_cache[m] for m in self.crosses]
        else:
            raw = _cross_script(xa, self.params, len(self.decoder.blocks), self.packed)
        source, prepared = self.prepared
        if len(source) != len(raw) or any(a is not b for a, b in zip(source, raw)):
            prepared = [t for k, v in zip(raw[::2], raw[1::2]) for t in _keys(k, v, self.n_head)]
            self.prepared = (raw, prepared)
        return prepared

    def __call__(self, x: Tensor, xa: Tensor, kv_cache: dict | None = None) -> Tensor:
        d = self.decoder
        offset = next(iter(kv_cache.values())).shape[1] if kv_cache else 0
        x = d.token_embedding(x) + d.positional_embedding[offset:offset + x.shape[-1]]
        x = x.to(xa.dtype)
        cross = self._cross(xa, kv_cache)
        cached = [kv_cache[m] for m in self.selves] if kv_cache and self.selves[0] in kv_cache else []
        logits, *kept = _step_script(x, self.params, cached, cross, d.mask, self.n_head, self.eps, self.packed)
        if kv_cache is not None:  # in the order whisper's hooks fill it: its first entry gives the offset
            raw = self.prepared[0]
            for i in range(0, len(kept), 2):
                kv_cache[self.selves[i]], kv_cache[self.selves[i + 1]] = kept[i], kept[i + 1]
                kv_cache[self.crosses[i]], kv_cache[self.crosses[i + 1]] = raw[i], raw[i + 1]
        return logits
