"""Distill-MOS (Stahl and Gamper, ICASSP 2025, arXiv 2502.05356): Microsoft's compact speech-quality predictor, a
CNN over the compressed complex spectrogram and a transformer with attention pooling (4.1 M parameters),
distilled from an XLS-R-based speech-quality model trained on more than 100k rated clips (mostly English,
degraded speech: noise, codecs, reverberation). Its weights are the ones inside the PyPI package `distillmos`
(`distillmos/weights/distill_mos_v7.pt`, MIT).

Its numbers are the package's own `ConvTransformerSQAModel` forward's, to 1e-4 (tests/test_distill_mos.py): the
same network, written here as the package writes it, loading the same state dict. Not by importing the package:
its module imports torchaudio for its command line, and the registry's torchaudio wheels stop at 2.11 and pin
torch 2.11, where this project pins 2.13 (docs/statistics.md). A clip is cut into 7.68 s windows (a shorter one
is zero-padded to one window), no more than 1 s apart, the first at its start and the last at its end; each
window is divided by its peak and scored alone, and the clip's value is 1 + 4 × the mean of the windows' sigmoid
outputs. Windows run two at a time, so a long clip's memory stays flat.

On the 1-5 scale of the listening tests behind its teacher, not UTMOS's, and never checked here against
listeners."""
from __future__ import annotations

import zipfile
from importlib.util import find_spec
from pathlib import Path

import numpy as np

from pipeline.core.source import ModelDamaged, Source
from pipeline.measures.base import MEASURES, Declaration, Scores

SR = 16000
WINDOW = 122880  # 7.68 s
MAX_HOP = 16000  # windows at most 1 s apart
AT_ONCE = 1  # windows per forward pass: one at a time is the fastest here, and a long clip's memory stays flat
REACH = 6  # input frames each side that one of its CNN's output frames depends on
SHORT_S = 0.5  # under this, a window is nearly all padding: said on the row
INSTALL = "pip install --no-deps distillmos==0.9.1 (scripts/setup installs it)"


def _package() -> Path | None:
    spec = find_spec("distillmos")  # locates the package without importing it (its module imports torchaudio)
    return Path(spec.origin).parent if spec is not None and spec.origin else None


def source() -> Source:
    package = _package()
    if package is None:
        raise ModelDamaged(f"distill_mos needs the PyPI package distillmos, which holds its weights: {INSTALL}")
    weights = package / "weights" / "distill_mos_v7.pt"
    if not weights.is_file():
        raise ModelDamaged(f"distill_mos: {weights} is missing; reinstall distillmos ({INSTALL})")
    try:  # a torch checkpoint is a zip archive: a torn or replaced file fails its CRCs here, not on every row
        with zipfile.ZipFile(weights) as z:
            bad = z.testzip()
    except (zipfile.BadZipFile, OSError) as e:
        raise ModelDamaged(f"distill_mos: {weights} is not a torch checkpoint ({e}); reinstall distillmos "
                           f"({INSTALL})") from None
    if bad is not None:
        raise ModelDamaged(f"distill_mos: {weights} is damaged (its member {bad} fails its CRC); reinstall "
                           f"distillmos ({INSTALL})")
    return Source(spec="distill_mos:v7", found="package", path=str(weights), files=(str(weights),),
                  repo="distillmos")


def starts(n: int) -> list[int]:
    """Where each window of a clip of n samples begins, as the package places them (its n is at least a window,
    after the padding)."""
    over = n - WINDOW
    hops = int(np.ceil(over / MAX_HOP)) + 1
    return [int(c * over) for c in np.linspace(0, 1, hops)]


def network():
    """The package's network, module for module, so that its state dict loads as it is."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    class ComplexSpecCNN(nn.Module):
        def __init__(self):
            super().__init__()
            layers, channels, fdim = [], 2, 161
            for i in range(6):
                out = min(64 * 2 ** max(i - 1, 0), 256)
                f_stride, t_stride = (2 if i >= 1 else 1), (2 if i == 5 else 1)
                layers += [nn.Conv2d(channels, out, (3, 3), stride=(f_stride, t_stride), padding=(0, 1)),
                           nn.LeakyReLU(0.1)]
                fdim = (fdim - 3) // f_stride + 1
                channels = out
            self.cnn = nn.Sequential(*layers)
            self.fdim = fdim

        def forward(self, x):
            x = F.pad(x, (80, 80), mode="reflect")  # (win − hop) / 2 each side
            spec = torch.view_as_real(torch.stft(x, n_fft=320, hop_length=160, win_length=320, center=False,
                                                 return_complex=True, window=torch.hann_window(320)))
            mag = torch.sum(spec ** 2, dim=-1, keepdim=True) ** 0.5
            compressed = (torch.clip(mag, 1e-12) ** 0.3 * spec / torch.clip(mag, 1e-12)).permute(0, 3, 1, 2)
            return torch.flatten(self.padded(compressed), 1, -2)

        def padded(self, frames):
            """The CNN over one window's frames, sparing the frames of its zero padding. Past the clip's end the
            frames are exactly 0, and an output frame whose input frames (the 6 convolutions reach 6 each side)
            are all such frames is the same for every one of them: it is computed once, from frames of zeros,
            and only the frames near the clip and near the window's end are computed as they are."""
            width = frames.shape[-1]
            heard = torch.nonzero(frames.abs().amax(dim=(0, 1, 2)))
            speech = int(heard[-1]) + 1 if len(heard) else 0  # frames from here on are all zeros
            first = (speech + REACH + 1) // 2  # the first output frame whose input frames are all zeros
            last = (width - 1 - REACH) // 2  # … and the last one away from the window's own end
            if first >= last:
                return self.cnn(frames)
            left = self.cnn(frames[..., :min(width, 2 * first + 4 * REACH)])[..., :first]
            zeros = frames.new_zeros(frames.shape[:-1] + (8 * REACH,))
            middle = self.cnn(zeros)[..., 2 * REACH:2 * REACH + 1]
            edge = width - 8 * REACH  # even: the edge's output frames line up with the window's
            right = self.cnn(frames[..., edge:])[..., last + 1 - edge // 2:]
            return torch.cat([left, middle.expand(*middle.shape[:-1], last + 1 - first), right], dim=-1)

    class PositionalEncoding(nn.Module):
        def __init__(self, d_model: int, seq_len: int):
            super().__init__()
            self.register_buffer("pe", torch.zeros(1, seq_len, d_model))  # the state dict holds its values

        def forward(self, x):
            return x + self.pe.expand(x.shape)

    class Transformer(nn.Module):
        def __init__(self, dim_input: int, dim: int = 200, heads: int = 8, layers: int = 7, seq_len: int = 384):
            super().__init__()
            self.norm = nn.BatchNorm1d(dim_input)
            self.position_encoding = PositionalEncoding(dim, seq_len)
            self.linear_proj = nn.Linear(dim_input, dim)
            layer = nn.TransformerEncoderLayer(d_model=dim, dim_feedforward=2 * dim, nhead=heads, batch_first=True,
                                               dropout=0.0)
            self.transformer_encoder = nn.TransformerEncoder(layer, num_layers=layers)

        def forward(self, x):
            x = self.linear_proj(self.norm(x.transpose(-1, -2)).transpose(-1, -2))
            return self.transformer_encoder(self.position_encoding(x), None)

    class PoolAttFF(nn.Module):
        def __init__(self, dim: int = 200):
            super().__init__()
            self.linear1, self.linear2, self.linear3 = nn.Linear(dim, 2 * dim), nn.Linear(2 * dim, 1), nn.Linear(dim, 1)

        def forward(self, x):
            att = F.softmax(self.linear2(F.relu(self.linear1(x))).transpose(2, 1), dim=2)
            return self.linear3(torch.bmm(att, x).squeeze(1))

    class Head(nn.Module):
        def __init__(self, dim_input: int, dim: int = 200):
            super().__init__()
            self.norm_input = nn.BatchNorm1d(dim_input)
            self.transformer = Transformer(dim_input, dim)
            self.norm_trans = nn.BatchNorm1d(dim)
            self.pool = PoolAttFF(dim)

        def forward(self, x):
            x = self.norm_input(x.transpose(-1, -2)).transpose(-1, -2)
            x = self.norm_trans(self.transformer(x).transpose(-1, -2)).transpose(-1, -2)
            return torch.sigmoid(self.pool(x).squeeze(-1))

    class DistillMOSNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.cnn = ComplexSpecCNN()
            self.transformer_pool_attn = Head(256 * self.cnn.fdim)

        def forward(self, windows):  # (n, WINDOW), each already divided by its peak
            return self.transformer_pool_attn(self.cnn(windows).permute(0, 2, 1))

    return DistillMOSNet()


class DistillMOS:
    def __init__(self, source: Source):
        import torch

        torch.set_num_threads(1)  # one utterance per core (measures/base.py), as the other torch measures run
        self.torch = torch
        self.net = network()
        self.net.load_state_dict(torch.load(source.path, map_location="cpu", weights_only=True)["model"])
        self.net.eval()

    def score(self, audio: np.ndarray) -> Scores:
        torch = self.torch
        x = np.asarray(audio, dtype=np.float32)
        if not len(x) or not np.any(x):
            return Scores({"distill_mos": None}, ("silent: no Distill-MOS for audio whose peak is 0",))
        notes = (f"shorter than {SHORT_S} s: Distill-MOS zero-pads it to 7.68 s",) if len(x) < SHORT_S * SR else ()
        if len(x) < WINDOW:
            x = np.pad(x, (0, WINDOW - len(x)))
        windows = torch.from_numpy(np.stack([x[s:s + WINDOW] for s in starts(len(x))]))
        windows = windows / (torch.max(torch.abs(windows), dim=1, keepdim=True).values + 1e-8)
        with torch.inference_mode():
            quality = torch.cat([self.net(windows[i:i + AT_ONCE]) for i in range(0, len(windows), AT_ONCE)])
        return Scores({"distill_mos": round(float(1 + 4 * quality.mean()), 6)}, notes)


MEASURES.register(Declaration(
    name="distill_mos",
    columns={"distill_mos": "Distill-MOS predicted MOS (1-5, higher is better) of the audio the ASR heard: each "
                            "7.68 s window divided by its peak"},
    source=source, load=DistillMOS, installed=lambda: _package() is not None,
    paper="Stahl, Gamper: Distillation and Pruning for Scalable Self-Supervised Representation-Based Speech Quality "
          "Assessment, ICASSP 2025 (arXiv 2502.05356)",
    comparable="the distillmos package's own model (equal to 1e-4); trained on degraded English speech, not on "
               "synthetic speech, and on its own 1-5 scale, not UTMOS's; no listener has checked it here"))
