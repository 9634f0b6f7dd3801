"""DNSMOS (Reddy et al., ICASSP 2022: P.835 SIG, BAK, OVRL; P.808 MOS), Microsoft's ONNX models as the PyPI
package `speechmos` ships them, the package VERSA calls. Its numbers are speechmos's `dnsmos.run(x, sr=16000)`,
computed faster with the same arithmetic.

speechmos loops a clip shorter than 9.01 s until it is not, then scores windows of 9.01 s one second apart, each
alone through both models, and averages them. Its window bounds are int((k + 9.01) * 16000): for k = 7 to 23 and
119 to 122 that is one sample short in floating point, and speechmos skips those windows; we skip them too, so
that the numbers are its numbers.

What is faster: the P.835 model frames a window into 900 frames of 10 ms, and its first four layers are 3×3
convolutions at full resolution, 80% of its work. Windows one second apart share 800 of their 900 frames, so
those layers run once over every frame a run of windows covers (at most CHUNK frames at a time, so that a clip of
minutes takes the memory of one of 20 s), and each window takes its 900 frames from there. Only a
window's first and last 8 frames differ (its own zero padding, where the shared pass sees neighbours): those are
computed from a 16-frame patch of that window alone, which four same-padded 3×3 convolutions, reaching 4 frames,
make exact. The rest of the model runs per window as before (the two parts cut from the model by _onnx_part.py).
The P.808 model's mel spectrograms are made with numpy from librosa's filters (_filters.py: the same floats), each
frame's transform shared by the windows that hold it. Values equal speechmos's to 1e-6 (tests/test_measures.py);
bench/measures_speed.py times both."""
from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

import numpy as np

from pipeline.core.source import ModelDamaged, Source, check_onnx
from pipeline.measures import _filters, _onnx_part
from pipeline.measures.base import MEASURES, Declaration, Scores

SR = 16000
WINDOW = 144160  # 9.01 s
HOP = SR  # windows one second apart
FRAME = 160  # the P.835 model's hop: 100 frames a second, 900 a window
FRAMES = 900
PATCH = 16  # frames of a window's edge computed alone
MARGIN = 8  # frames computed beyond a chunk's windows: more than the 4 its convolutions reach
CHUNK = 2000  # frames of windows whose convolutions are shared in one pass (20 s): the memory a long clip takes
SHORT_S = 0.5  # under this, the looped clip is mostly repetition: said on the row
INTO_CONVS, OUT_OF_CONVS = "mos_estimator_logpow/concat:0", "mos_estimator_logpow/conv2d_3/Relu:0"
# DNSMOS's own polynomial fits from the P.835 model's raw outputs to MOS (speechmos, not personalized)
FITS = {"sig": (-0.08397278, 1.22083953, 0.0052439), "bak": (-0.13166888, 1.60915514, -0.39604546),
        "ovrl": (-0.06766283, 1.11546468, 0.04602535)}
COLUMNS = {"dnsmos_sig": "DNSMOS P.835 speech quality (1-5), of the audio the ASR heard divided by its peak",
           "dnsmos_bak": "DNSMOS P.835 background-noise quality (1-5): higher is less noise",
           "dnsmos_ovrl": "DNSMOS P.835 overall quality (1-5)",
           "dnsmos_p808": "DNSMOS P.808 MOS (1-5)"}


def source() -> Source:
    spec = find_spec("speechmos")
    if spec is None or spec.origin is None:
        raise ModelDamaged("dnsmos needs the PyPI package speechmos, which holds its models: run scripts/setup")
    folder = Path(spec.origin).parent / "dnsmos_models"
    files = (folder / "sig_bak_ovr.onnx", folder / "model_v8.onnx")
    for f in files:
        if not f.is_file():
            raise ModelDamaged(f"dnsmos: {f} is missing; reinstall speechmos (scripts/setup)")
        check_onnx("dnsmos", f)
    return Source(spec="dnsmos:speechmos", found="package", path=str(folder), files=tuple(map(str, files)),
                  repo="speechmos")


def chunks(firsts: list[int]) -> list[list[int]]:
    """Windows (by their first frame) in runs whose frames span at most CHUNK."""
    out: list[list[int]] = []
    for f in firsts:
        if out and f + FRAMES - out[-1][0] <= CHUNK:
            out[-1].append(f)
        else:
            out.append([f])
    return out


def windows(audio: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """The looped audio and the window starts (in seconds) speechmos scores, with its arithmetic."""
    while len(audio) < int(9.01 * SR):
        audio = np.append(audio, audio)
    hops = int(np.floor(len(audio) / SR) - 9.01) + 1
    return audio, [k for k in range(hops) if len(audio[int(k * HOP): int((k + 9.01) * HOP)]) == WINDOW]


class DNSMOS:
    def __init__(self, source: Source):
        import onnxruntime as ort

        primary, p808 = source.files
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # one utterance per core (measures/base.py); the same arithmetic anywhere
        model = Path(primary).read_bytes()
        self.convs = ort.InferenceSession(_onnx_part.part(model, [INTO_CONVS], [OUT_OF_CONVS]), options)
        self.head = ort.InferenceSession(_onnx_part.part(model, [OUT_OF_CONVS], ["Identity:0"]), options)
        self.p808 = ort.InferenceSession(p808, options)
        self.mel = _filters.mel(SR, 321, 120)
        self.hann = _filters.hann(321).astype(np.float32)

    def score(self, audio: np.ndarray) -> Scores:
        peak = float(np.max(np.abs(audio))) if len(audio) else 0.0
        if peak == 0:
            return Scores(dict.fromkeys(COLUMNS), ("silent: no DNSMOS for audio whose peak is 0",))
        notes = (f"shorter than {SHORT_S} s: DNSMOS loops it to 9 s",) if len(audio) < SHORT_S * SR else ()
        looped, starts = windows(np.asarray(audio / peak, dtype=np.float32))  # divided by its peak, as VERSA
        sig, bak, ovrl = np.mean(self.p835(looped, starts), axis=0)
        p808 = float(np.mean(self.p808_mos(looped, starts)))
        return Scores({"dnsmos_sig": round(float(sig), 6), "dnsmos_bak": round(float(bak), 6),
                       "dnsmos_ovrl": round(float(ovrl), 6), "dnsmos_p808": round(p808, 6)}, notes)

    def p835(self, audio: np.ndarray, starts: list[int]) -> np.ndarray:
        """Each window's (sig, bak, ovrl), the full-resolution convolutions shared between the windows of each run
        of them that spans at most CHUNK frames, so that a long clip's memory stays flat."""
        span = starts[-1] * HOP + WINDOW
        n = (span - FRAME) // FRAME
        frames = np.concatenate([audio[:n * FRAME].reshape(n, FRAME),
                                 audio[FRAME:FRAME + n * FRAME].reshape(n, FRAME)], axis=1)[None]  # 20 ms frames
        raw = []
        half = PATCH // 2
        for group in chunks([k * 100 for k in starts]):
            # the frames the group's windows cover, and MARGIN more each side (the true edges where there are no
            # more): the four 3×3 convolutions reach 4 frames, so every frame a window takes from here is exact
            low, high = max(0, group[0] - MARGIN), min(n, group[-1] + FRAMES + MARGIN)
            shared = self.convs.run(None, {INTO_CONVS: frames[:, low:high]})[0]
            lefts = self.convs.run(None, {INTO_CONVS: np.stack([frames[0, f:f + PATCH] for f in group])})[0]
            rights = self.convs.run(None, {INTO_CONVS: np.stack([frames[0, f + FRAMES - PATCH:f + FRAMES]
                                                                 for f in group])})[0]
            for i, f in enumerate(group):
                window = shared[:, :, f - low:f - low + FRAMES].copy()
                window[0, :, :half] = lefts[i, :, :half]
                window[0, :, FRAMES - half:] = rights[i, :, half:]
                raw.append(self.head.run(None, {OUT_OF_CONVS: window})[0][0])
        raw = np.asarray(raw, dtype=np.float64)
        return np.stack([np.polyval(FITS[k], raw[:, i]) for i, k in enumerate(("sig", "bak", "ovrl"))], axis=1)

    def p808_mos(self, audio: np.ndarray, starts: list[int]) -> list[float]:
        """Each window's P.808 MOS from its log-mel spectrogram, as librosa.feature.melspectrogram(n_fft=321,
        hop_length=160, n_mels=120) and power_to_db(ref=np.max) make it for speechmos. A window's frame t (of 900,
        centred on its sample 160 t) is frame 100 k + t of the looped audio, except the two its zero padding
        reaches (t = 0 and 899): the rest are transformed once for all windows."""
        shared = self.power(np.lib.stride_tricks.sliding_window_view(audio[:starts[-1] * HOP + 143841], 321)[::FRAME])
        out = []
        for k in starts:
            padded = np.pad(audio[k * HOP:k * HOP + WINDOW - FRAME], 160)
            edges = self.power(np.stack([padded[t * FRAME:t * FRAME + 321] for t in (0, 899)]))
            power = np.concatenate([edges[:1], shared[k * 100:k * 100 + 898], edges[1:]])
            mel = self.mel @ power.T.astype(np.float32)
            db = 10 * np.log10(np.maximum(1e-10, mel)) - 10 * np.log10(max(1e-10, float(mel.max())))
            db = np.maximum(db, db.max() - 80)
            features = ((db + 40) / 40).T.astype(np.float32)[None]
            out.append(float(self.p808.run(None, {"input_1": features})[0][0][0]))
        return out

    def power(self, frames: np.ndarray) -> np.ndarray:
        return np.abs(np.fft.rfft(frames * self.hann, axis=1)) ** 2


MEASURES.register(Declaration(
    name="dnsmos", columns=COLUMNS, source=source, load=DNSMOS,
    paper="Reddy, Gopal, Cutler: DNSMOS P.835, ICASSP 2022; DNSMOS (P.808), ICASSP 2021",
    comparable="VERSA's and speechmos's DNSMOS (equal to 1e-6); a predictor trained for noise suppression, not a "
               "listener's MOS, and not on UTMOS's or NISQA's scale"))
