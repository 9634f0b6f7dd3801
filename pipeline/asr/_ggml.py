"""whisper.cpp's ggml model file, written from an openai-whisper checkpoint and read back, from the format as
whisper.cpp's models/convert-pt-to-ggml.py writes it:

1. the magic 0x67676d6c ("ggml"), little-endian int32;
2. eleven int32 hyper-parameters: n_vocab, n_audio_ctx, n_audio_state, n_audio_head, n_audio_layer, n_text_ctx,
   n_text_state, n_text_head, n_text_layer, n_mels, and the file type (1: float16);
3. the mel filters: int32 rows and columns, then float32 values (whisper's assets/mel_filters.npz);
4. the tokenizer: an int32 count, then each token's bytes with its int32 length, in rank order (whisper's
   gpt2.tiktoken for English-only models, multilingual.tiktoken for the others);
5. every tensor of the state dict: int32 n_dims, name length and type (0 float32, 1 float16), the dims innermost
   first, the name, then the data. Matrices are float16; 1-D tensors, the two conv biases (stored as [n, 1]) and
   the positional embeddings are float32."""
from __future__ import annotations

import base64
import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipeline.core import store

MAGIC = 0x67676D6C
HPARAMS = ("n_vocab", "n_audio_ctx", "n_audio_state", "n_audio_head", "n_audio_layer", "n_text_ctx",
           "n_text_state", "n_text_head", "n_text_layer", "n_mels")
FLOAT32 = ("encoder.conv1.bias", "encoder.conv2.bias", "encoder.positional_embedding",
           "decoder.positional_embedding")
REVISION = 1  # bumped when the file written for the same checkpoint changes


class NotGgml(ValueError):
    """A file that is not a whole ggml Whisper model: the message says what is wrong."""


@dataclass
class GgmlModel:
    dims: dict[str, int]
    ftype: int
    filters: np.ndarray
    tokens: list[bytes]
    tensors: dict[str, np.ndarray]  # as stored: conv biases [n, 1]


def assets(multilingual: bool, n_mels: int) -> tuple[np.ndarray, list[bytes]]:
    """whisper's mel filters and tokenizer ranks, from the openai-whisper package."""
    import whisper

    folder = Path(whisper.__file__).parent / "assets"
    with np.load(folder / "mel_filters.npz") as f:
        filters = f[f"mel_{n_mels}"].astype(np.float32)
    lines = (folder / ("multilingual.tiktoken" if multilingual else "gpt2.tiktoken")).read_text().splitlines()
    ranked = sorted((int(rank), base64.b64decode(token)) for token, rank in (line.split() for line in lines if line))
    return filters, [token for _, token in ranked]


def encode(dims: dict[str, int], state: dict[str, np.ndarray]) -> bytes:
    """The ggml file of a checkpoint's dims and state dict (numpy arrays)."""
    filters, tokens = assets(dims["n_vocab"] >= 51865, dims["n_mels"])
    out = [struct.pack("<i", MAGIC), struct.pack("<11i", *(dims[k] for k in HPARAMS), 1),
           struct.pack("<ii", *filters.shape), filters.astype("<f4").tobytes(), struct.pack("<i", len(tokens))]
    out += [struct.pack("<i", len(t)) + t for t in tokens]
    for name, value in state.items():
        data = np.asarray(value).squeeze()
        if name in ("encoder.conv1.bias", "encoder.conv2.bias"):
            data = data.reshape(data.shape[0], 1)
        wide = data.ndim < 2 or name in FLOAT32
        data = data.astype("<f4" if wide else "<f2")
        key = name.encode()
        out += [struct.pack("<iii", data.ndim, len(key), 0 if wide else 1),
                struct.pack(f"<{data.ndim}i", *data.shape[::-1]), key, data.tobytes()]
    return b"".join(out)


def decode(data: bytes, path: Path | str = "the file") -> GgmlModel:
    """Read a ggml Whisper file back; NotGgml when it is foreign or cut short."""
    view, at = memoryview(data), 0

    def take(n: int) -> memoryview:
        nonlocal at
        if at + n > len(view):
            raise NotGgml(f"{path}: cut short at byte {len(view)} (a torn download or copy?); it needs {n} bytes "
                          f"from byte {at}")
        at += n
        return view[at - n:at]

    def ints(n: int) -> tuple[int, ...]:
        return struct.unpack(f"<{n}i", take(4 * n))

    if len(view) < 4 or ints(1)[0] != MAGIC:
        raise NotGgml(f"{path}: not a ggml file (no ggml magic number at its start); give a whisper.cpp model "
                      "(ggml-*.bin) or a model openai-whisper loads")
    *values, ftype = ints(11)
    dims = dict(zip(HPARAMS, values))
    rows, cols = ints(2)
    filters = np.frombuffer(take(4 * rows * cols), "<f4").reshape(rows, cols)
    tokens = [bytes(take(ints(1)[0])) for _ in range(ints(1)[0])]
    tensors = {}
    while at < len(view):
        n_dims, length, kind = ints(3)
        shape = ints(n_dims)[::-1]
        name = bytes(take(length)).decode()
        dtype = {0: "<f4", 1: "<f2"}.get(kind)
        if dtype is None:
            raise NotGgml(f"{path}: tensor {name} has type {kind}; this reader takes float32 and float16 only")
        tensors[name] = np.frombuffer(take(int(np.prod(shape)) * np.dtype(dtype).itemsize), dtype).reshape(shape)
    return GgmlModel(dims, ftype, filters, tokens, tensors)


def check(path: Path) -> dict[str, int]:
    """A ggml file's hyper-parameters, once its whole layout is walked (every section's length against the file's,
    tensor data skipped: milliseconds); NotGgml for a foreign file, another model's, or one cut short."""
    import mmap

    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < 48:
            raise NotGgml(f"{path}: {size} bytes, too short for a ggml Whisper model; give a whisper.cpp model "
                          "(ggml-*.bin) or a model openai-whisper loads")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            if struct.unpack_from("<i", data)[0] != MAGIC:
                raise NotGgml(f"{path}: not a ggml file (no ggml magic number at its start); give a whisper.cpp "
                              "model (ggml-*.bin) or a model openai-whisper loads")
            dims = dict(zip(HPARAMS, struct.unpack_from("<10i", data, 4)))
            if not (51864 <= dims["n_vocab"] <= 51866 and dims["n_mels"] in (80, 128)):
                raise NotGgml(f"{path}: a ggml file, but not of a Whisper model (n_vocab {dims['n_vocab']}, "
                              f"n_mels {dims['n_mels']})")
            walked = _walk(data, size)
            if walked is None:
                raise NotGgml(f"{path}: cut short ({size} bytes, ends inside a section): a torn download or copy; "
                              "fetch or convert it again")
            tensors = walked[1]
            if tensors < 4 * dims["n_audio_layer"]:
                raise NotGgml(f"{path}: {tensors} tensors, fewer than a Whisper model's: a torn download or copy")
    return dims


def _walk(data, size: int) -> tuple[int, int] | None:
    """The end of the last tensor and the tensor count, or None where a section runs past the end."""
    at = 48
    rows, cols = struct.unpack_from("<ii", data, at)
    at += 8 + 4 * rows * cols
    if at + 4 > size:
        return None
    (count,) = struct.unpack_from("<i", data, at)
    at += 4
    for _ in range(count):
        if at + 4 > size:
            return None
        at += 4 + struct.unpack_from("<i", data, at)[0]
    tensors = 0
    while at < size:
        if at + 12 > size:
            return None
        n_dims, length, kind = struct.unpack_from("<iii", data, at)
        if not 0 < n_dims <= 4 or kind not in (0, 1) or at + 12 + 4 * n_dims > size:
            return None
        shape = struct.unpack_from(f"<{n_dims}i", data, at + 12)
        at += 12 + 4 * n_dims + length + int(np.prod(shape)) * (4 if kind == 0 else 2)
        tensors += 1
    return (at, tensors) if at == size else None


def converted(checkpoint: Path, models_dir: str | Path) -> Path:
    """The ggml file of an openai-whisper checkpoint, written once into models/whisper/ (named by the checkpoint's
    sha256) and hash-checked on reuse."""
    import torch

    src_sha = store.file_hashes(models_dir, [checkpoint])[str(checkpoint)]
    out = Path(models_dir) / "whisper" / f"ggml-{src_sha[:16]}-r{REVISION}.bin"
    if store.converted_is_whole(out, src_sha):
        return out
    ckpt = torch.load(checkpoint, map_location="cpu", weights_only=True)
    state = {k: v.float().numpy() for k, v in ckpt["model_state_dict"].items()}
    store.write_bytes(out, encode(ckpt["dims"], state))
    store.record_conversion(out, checkpoint, src_sha)
    return out
