"""Speaker similarity with Resemblyzer (PyPI `resemblyzer`): the GE2E speaker encoder of Wan et al., ICASSP 2018,
trained by its authors on VoxCeleb and LibriSpeech, its weights inside the wheel.

Each utterance's embedding is Resemblyzer's own `embed_utterance(preprocess_wav(audio, 16000))` of the 16 kHz
audio the ASR heard, to the bit (tests/test_measures.py), computed with Resemblyzer's own encoder, volume
normalization and silence trimming, and its mel spectrogram made by _filters.py: librosa's spectral modules, which
Resemblyzer calls for it, cost a run 1.5-2 s to import, several times the measure's own work on a run's clips.
`speaker_sim` is its cosine with the speaker reference's embedding (a voice-cloning system's prompt audio, given
per row by an --audio-manifest column `speaker_reference`, or per voice by `assess.speaker_references`). Without a
reference, the embeddings still give each voice's consistency and the similarity between voices
(statistics/voices.py).

These values are on Resemblyzer's scale, not on that of the WavLM-ECAPA SIM in seed-tts-eval and most papers: GE2E
embeddings are non-negative, so cosines between any two voices run high (0.6-0.8 between different speakers is
common) and only comparisons within this tool mean much."""
from __future__ import annotations

import hashlib
from importlib.util import find_spec
from pathlib import Path

import numpy as np

from pipeline.core.source import ModelDamaged, Source
from pipeline.measures import _filters
from pipeline.measures.base import MEASURES, SPEAKER_REFERENCE, Declaration, Scores

SR = 16000
MIN_SPEECH_S = 0.2  # less voiced audio than this after Resemblyzer's silence trimming has no embedding


def source() -> Source:
    spec = find_spec("resemblyzer")
    if spec is None or spec.origin is None:
        raise ModelDamaged("speaker_sim needs the PyPI package resemblyzer: run scripts/setup")
    weights = Path(spec.origin).parent / "pretrained.pt"
    if not weights.is_file() or weights.stat().st_size < 1 << 20:
        raise ModelDamaged(f"speaker_sim: {weights} is missing or truncated; reinstall resemblyzer (scripts/setup)")
    return Source(spec="speaker_sim:resemblyzer", found="package", path=str(weights), files=(str(weights),),
                  repo="resemblyzer")


class SpeakerSimilarity:
    def __init__(self, source: Source):
        import torch
        from resemblyzer import VoiceEncoder, hparams, normalize_volume, trim_long_silences

        self.torch, self.hparams = torch, hparams
        self.encoder = VoiceEncoder("cpu", verbose=False, weights_fpath=source.path)
        self.normalize_volume, self.trim_long_silences = normalize_volume, trim_long_silences
        self.references: dict[str, np.ndarray | None] = {}  # by content: one reference serves many utterances

    def embed(self, audio: np.ndarray) -> np.ndarray | None:
        """Resemblyzer's embed_utterance(preprocess_wav(audio, 16000)), step by step: preprocess_wav's resampling
        from 16 kHz to 16 kHz returns the audio as it is, then it normalizes the volume and trims silences;
        embed_utterance cuts 1.6 s partials 1.3 a second, zero-pads the last, and L2-normalizes the mean of their
        embeddings."""
        if not len(audio) or not np.any(audio):
            return None
        h = self.hparams
        wav = self.normalize_volume(np.asarray(audio, dtype=np.float32), h.audio_norm_target_dBFS, increase_only=True)
        wav = self.trim_long_silences(wav)
        if len(wav) < MIN_SPEECH_S * SR:
            return None
        wav_slices, mel_slices = self.encoder.compute_partial_slices(len(wav), rate=1.3, min_coverage=0.75)
        if wav_slices[-1].stop >= len(wav):
            wav = np.pad(wav, (0, wav_slices[-1].stop - len(wav)), "constant")
        mel = _filters.melspectrogram(wav, SR, n_fft=SR * h.mel_window_length // 1000,
                                      hop_length=SR * h.mel_window_step // 1000, n_mels=h.mel_n_channels).T
        with self.torch.no_grad():
            partials = self.encoder(self.torch.from_numpy(np.array([mel[s] for s in mel_slices]))).numpy()
        raw = np.mean(partials, axis=0)
        return raw / np.linalg.norm(raw, 2)

    def score(self, audio: np.ndarray, speaker_reference: np.ndarray | None) -> Scores:
        reference = speaker_reference
        mine = self.embed(audio)
        if mine is None:
            return Scores({"speaker_sim": None}, ("no speech to embed (silent, or under 0.2 s of voice)",))
        if reference is None:
            return Scores({"speaker_sim": None}, (), tuple(round(float(v), 6) for v in mine))
        key = hashlib.sha256(np.ascontiguousarray(reference).tobytes()).hexdigest()
        if key not in self.references:
            self.references[key] = self.embed(reference)
        theirs = self.references[key]
        if theirs is None:
            return Scores({"speaker_sim": None}, ("the speaker reference has no speech to embed",),
                          tuple(round(float(v), 6) for v in mine))
        similarity = float(np.dot(mine, theirs) / (np.linalg.norm(mine) * np.linalg.norm(theirs)))
        return Scores({"speaker_sim": round(similarity, 6)}, (), tuple(round(float(v), 6) for v in mine))


MEASURES.register(Declaration(
    name="speaker_sim",
    columns={"speaker_sim": "cosine similarity (Resemblyzer GE2E) of the utterance and its speaker reference; "
                            "empty without a reference"},
    source=source, load=SpeakerSimilarity, needs=(SPEAKER_REFERENCE,),
    paper="Wan, Wang, Papir, Lopez Moreno: Generalized End-to-End Loss for Speaker Verification, ICASSP 2018",
    comparable="other runs of this tool only: Resemblyzer GE2E cosines, not on the scale of the WavLM-ECAPA SIM in "
               "seed-tts-eval and most papers (two different voices often score 0.6-0.8)",
    predicts="smos"))
