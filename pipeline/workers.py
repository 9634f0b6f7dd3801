"""The per-item work of synthesis and transcription, as objects that load their model once.

The same classes run in-process (local executor) and as Ray actors (ray executor): a worker never touches the
run directory; it returns audio or text, and the stage writes files through its per-item cache."""
from __future__ import annotations

import os
import socket
import time

import numpy as np

from pipeline.asr import base as asr
from pipeline.source import Source
from pipeline.tts import base as tts


def where() -> dict:
    """Which node and process did the work (a Ray node id when inside Ray)."""
    node = socket.gethostname()
    try:
        import ray

        if ray.is_initialized():
            node = ray.get_runtime_context().get_node_id()
    except ImportError:
        pass
    return {"node": node, "pid": os.getpid()}


class Speaker:
    """One voice, loaded once from its resolved Source."""

    def __init__(self, source: Source, options: tts.TTSConfig):
        self.voice, self.error = None, ""
        try:
            self.voice = tts.load(source, options)
        except Exception as e:  # reported on every row of this voice; the other voices go on
            self.error = str(e)

    def speak(self, texts: list[str]) -> list[dict]:
        return [self.speak_one(text) for text in texts]

    def speak_one(self, text: str) -> dict:
        """status ok with float32 `samples` and `sr`, or skipped/error with the reason."""
        out = {"tts_seconds": 0.0, "audio_seconds": 0.0, "samples": None, "sr": 0, **where()}
        if self.voice is None:
            return {**out, "status": "error", "error": self.error}
        t0 = time.perf_counter()
        try:
            samples, sr = self.voice.synthesize(text)
        except tts.UnspeakableText as e:
            return {**out, "status": "skipped", "error": str(e)}
        except Exception as e:  # one bad sentence must not stop the others
            return {**out, "status": "error", "error": f"{type(e).__name__}: {e}"}
        if not np.isfinite(samples).all():
            return {**out, "status": "error", "error": f"{self.voice.name} made non-finite samples (NaN or Inf)"}
        return {**out, "status": "ok", "error": "", "samples": np.asarray(samples, dtype=np.float32), "sr": sr,
                "tts_seconds": round(time.perf_counter() - t0, 4), "audio_seconds": round(len(samples) / sr, 4)}


class Listener:
    """One ASR engine, loaded once from its resolved Source."""

    def __init__(self, source: Source, options: asr.ASRConfig, models_dir: str, device: str = "cpu"):
        self.recognizer, self.error = None, ""
        try:
            self.recognizer = asr.load(source, options, models_dir, device)
        except Exception as e:
            self.error = f"{source.spec}: {e}"

    def transcribe(self, arrays: list[np.ndarray]) -> list[dict]:
        if self.recognizer is None:
            return [{"status": "error", "error": self.error, "hypothesis": "", "asr_seconds": None, **where()}
                    for _ in arrays]
        return [{"status": "ok", "error": "", "hypothesis": text, "asr_seconds": round(d["asr_seconds"], 4),
                 "mode": d.get("mode", ""), **where()} for text, d in self.recognizer.transcribe(arrays)]
