"""Bad input, as users give it: every case ends with the README's exit code and a message that names the input,
never a traceback; where only some rows are bad, the others go through unharmed."""
import re
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from pipeline.core import store
from tests.helpers import NO_MEASURES, TINY, cli

pytestmark = pytest.mark.slow  # real models and pipeline runs: left out of `pytest -m "not slow"`

TOKENS = np.array([464, 5044, 286, 262, 2119, 13] * 40, dtype=np.uint16)  # GPT-2 ids, 240 of them


def text(name: str, content: str | bytes):
    def make(d: Path):
        (d / name).write_bytes(content.encode() if isinstance(content, str) else content)
    return make


def tokens(name: str, ids: np.ndarray | bytes):
    def make(d: Path):
        (d / name).write_bytes(ids if isinstance(ids, bytes) else ids.tobytes())
    return make


def both(*makers):
    def make(d: Path):
        for m in makers:
            m(d)
    return make


def nothing(d: Path):
    pass


MANIFEST_HEAD = "id\taudio\treference\n"
# name: (make the files, arguments, exit code, what stderr must name)
CASES = {
    "sentences: invalid UTF-8": (text("s.txt", b"A good line.\n\xff\xfe broken\n"), ["--sentences", "s.txt"], 2,
                                 ["s.txt line 2", "UTF-8"]),
    "sentences: only blank lines": (text("s.txt", "\n  \n\t\n"), ["--sentences", "s.txt"], 2,
                                    ["s.txt", "no sentences"]),
    "sentences: empty file": (text("s.txt", ""), ["--sentences", "s.txt"], 2, ["s.txt", "no sentences"]),
    "sentences: a directory": (lambda d: (d / "dir").mkdir(), ["--sentences", "dir"], 2, ["dir", "no such file"]),
    "sentences: missing": (nothing, ["--sentences", "nope.txt"], 2, ["nope.txt"]),
    "sentences: a wav given as text": (text("s.wav", b"RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\xff\xff"),
                                       ["--sentences", "s.wav"], 2, ["s.wav", "UTF-8"]),
    "manifest: no reference column": (text("m.tsv", "id\taudio\nx\tx.wav\n"), ["--audio-manifest", "m.tsv"], 2,
                                      ["m.tsv", "no reference text column"]),
    "manifest: empty": (text("m.tsv", ""), ["--audio-manifest", "m.tsv"], 2, ["m.tsv", "empty manifest"]),
    "manifest: duplicate id": (text("m.tsv", MANIFEST_HEAD + "a\ta.wav\tone\na\tb.wav\ttwo\n"),
                               ["--audio-manifest", "m.tsv"], 2, ["m.tsv line 3", "duplicate id"]),
    "manifest: empty id": (text("m.tsv", MANIFEST_HEAD + "\ta.wav\tone\n"), ["--audio-manifest", "m.tsv"], 2,
                           ["m.tsv line 2", "empty id"]),
    "manifest: invalid UTF-8": (text("m.tsv", MANIFEST_HEAD.encode() + b"a\ta.wav\tna\xefve\n"),
                                ["--audio-manifest", "m.tsv"], 2, ["m.tsv line 2", "UTF-8"]),
    "corpus: too short for the block size": (text("c.txt", "To be, or not to be.\n" * 3),
                                             ["--corpus", "c.txt", "--stages", "prepare"], 2,
                                             ["c.txt", "GPT-2 tokens", "66"]),
    "corpus: invalid UTF-8": (text("c.txt", b"Some text\n\x80\n"), ["--corpus", "c.txt"], 2, ["c.txt line 2"]),
    "corpus: missing": (nothing, ["--corpus", "none.txt"], 2, ["none.txt"]),
    "train-bin: odd byte count": (both(tokens("t.bin", TOKENS.tobytes() + b"\x01"), tokens("v.bin", TOKENS)),
                                  ["--train-bin", "t.bin", "--val-bin", "v.bin"], 2, ["t.bin", "uint16"]),
    "val-bin: too few tokens": (both(tokens("t.bin", TOKENS), tokens("v.bin", TOKENS[:10])),
                                ["--train-bin", "t.bin", "--val-bin", "v.bin"], 2, ["v.bin", "10 GPT-2 tokens"]),
    "train-bin: ids outside GPT-2": (both(tokens("t.bin", TOKENS + 60000 - 464), tokens("v.bin", TOKENS)),
                                     ["--train-bin", "t.bin", "--val-bin", "v.bin"], 2, ["t.bin", "vocabulary"]),
    "train-bin without val-bin": (tokens("t.bin", TOKENS), ["--train-bin", "t.bin"], 2, ["val_bin"]),
    "config: invalid TOML": (text("c.toml", "[train\nmax_iters = 3\n"), ["--config", "c.toml"], 2, ["c.toml"]),
    "config: unknown key": (text("c.toml", "[train]\nmax_iter = 3\n"), ["--config", "c.toml"], 2, ["max_iter"]),
    "config: wrong type": (text("c.toml", "[train]\nmax_iters = 'many'\n"), ["--config", "c.toml"], 2,
                           ["train.max_iters", "int"]),
    "config: invalid UTF-8": (text("c.toml", b"[train]\n# \xff\n"), ["--config", "c.toml"], 2, ["c.toml line 2"]),
    "--set without a value": (nothing, ["--set", "train.max_iters"], 2, ["train.max_iters", "KEY=VALUE"]),
    "--set unknown key": (nothing, ["--set", "tts.voicez=piper:joe"], 2, ["voicez"]),
    "--set bad boolean": (nothing, ["--set", "tts.voice_noise=maybe"], 2, ["tts.voice_noise", "true or false"]),
    "--set a removed option": (nothing, ["--set", "asr.pack=true"], 2, ["pack"]),
    "--set negative threads": (nothing, ["--set", "asr.threads=-2"], 2, ["asr.threads"]),
    "--set a zero batch size": (nothing, ["--set", "asr.batch_size=0"], 2, ["asr.batch_size"]),
    "--conditions: unknown": (nothing, ["--conditions", "clean,reverb"], 2, ["reverb", "silence"]),
    "--voices: unknown family": (nothing, ["--voices", "festival:kal"], 2, ["festival:kal"]),
    "score: --ref missing": (text("h.txt", "a\n"), ["score", "--ref", "r.txt", "--hyp", "h.txt"], 2,
                             ["--ref r.txt", "no such file"]),
    "score: --hyp not UTF-8": (both(text("r.txt", "a b\n"), text("h.txt", b"a \xe9\n")),
                               ["score", "--ref", "r.txt", "--hyp", "h.txt"], 2, ["--hyp h.txt line 1"]),
    "score: line counts differ": (both(text("r.txt", "a\nb\nc\n"), text("h.txt", "a\nb\n")),
                                  ["score", "--ref", "r.txt", "--hyp", "h.txt"], 2, ["r.txt has 3 lines", "h.txt has 2;"]),
    "score: trn with a repeated id": (both(text("r.txt", "a (u1)\nb (u1)\n"), text("h.txt", "a (u1)\nb (u2)\n")),
                                      ["score", "--ref", "r.txt", "--hyp", "h.txt"], 2, ["--ref r.txt", "twice"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_gets_a_clear_exit_and_names_the_input(tmp_path, models_dir, case):
    make, args, code, named = CASES[case]
    make(tmp_path)
    proc = cli(tmp_path, *args, models=models_dir, check=False) if args[0] != "score" else \
        cli_score(tmp_path, *args[1:])
    assert proc.returncode == code, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    for word in named:
        assert word in proc.stderr, (word, proc.stderr[-1000:])
    assert not (tmp_path / "audio").exists()  # checked before any work


def cli_score(cwd: Path, *args):
    import subprocess
    import sys

    from tests.helpers import ROOT

    return subprocess.run([sys.executable, str(ROOT / "run_pipeline.py"), "score", *args], cwd=cwd,
                          capture_output=True, text=True)


def test_a_byte_order_mark_is_not_part_of_the_first_sentence(tmp_path, models_dir):
    (tmp_path / "s.txt").write_bytes("\ufeffNow is the winter.\r\nAll the world's a stage.\r\n".encode())
    cli(tmp_path, "--sentences", "s.txt", "--stages", "own_sentences", models=models_dir)
    rows = store.read_csv(tmp_path / "results" / "default" / "sentences.csv")
    assert [r["text"] for r in rows] == ["Now is the winter.", "All the world's a stage."]


def test_score_pairs_empty_hypothesis_lines_as_utterances(tmp_path):
    (tmp_path / "r.txt").write_text("the first line\nthe second line\nthree more words\nand a fourth\n")
    (tmp_path / "h.txt").write_text("the first line\nthe second line\n\n\n")  # the engine heard nothing at the end
    proc = cli_score(tmp_path, "--ref", "r.txt", "--hyp", "h.txt", "--out", "out")
    assert proc.returncode == 0, proc.stderr
    rows = store.read_csv(tmp_path / "out" / "utterances.csv")
    assert [int(r["deletions"]) for r in rows] == [0, 0, 3, 3]
    assert [r["flags"] for r in rows] == ["", "", "empty_hypothesis", "empty_hypothesis"]


def test_audio_in_odd_formats_is_heard_and_broken_files_are_rows_with_errors(tmp_path, models_dir, piper_speech):
    import soxr

    texts, speech = piper_speech
    stereo = soxr.resample(speech[1], 16000, 44100)
    sf.write(tmp_path / "stereo44k.wav", np.stack([stereo, stereo], axis=1), 44100, subtype="FLOAT")
    sf.write(tmp_path / "speech.flac", soxr.resample(speech[2], 16000, 22050), 22050, subtype="PCM_16")
    sf.write(tmp_path / "speech.ogg", speech[1], 16000, format="OGG", subtype="VORBIS")
    sf.write(tmp_path / "u8.wav", speech[2], 16000, subtype="PCM_U8")
    (tmp_path / "notes.wav").write_text("these are notes, not audio")
    sf.write(tmp_path / "header-only.wav", np.zeros(0, np.float32), 16000)
    damaged = speech[1].copy()
    damaged[100], damaged[2000] = np.nan, np.inf
    sf.write(tmp_path / "nan.wav", damaged, 16000, subtype="FLOAT")
    rows = [("stereo", "stereo44k.wav", texts[1]), ("flac", "speech.flac", texts[2]),
            ("ogg", "speech.ogg", texts[1]), ("u8", "u8.wav", texts[2]), ("notes", "notes.wav", "some words"),
            ("empty", "header-only.wav", "some words"), ("nan", "nan.wav", texts[1])]
    (tmp_path / "m.tsv").write_text(MANIFEST_HEAD + "".join(f"{i}\t{a}\t{t}\n" for i, a, t in rows))
    proc = cli(tmp_path, "--audio-manifest", "m.tsv", *TINY, *NO_MEASURES, models=models_dir, check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    out = {r["sentence_id"]: r for r in store.read_csv(tmp_path / "results" / "default" / "utterances.csv")}
    for good in ("stereo", "flac", "ogg", "u8"):
        assert out[good]["status"] == "ok" and float(out[good]["wer"]) <= 0.35, out[good]
    assert out["notes"]["status"] == "error" and "notes.wav" in out["notes"]["error"]
    assert out["empty"]["status"] == "error" and "header-only.wav" in out["empty"]["error"]
    assert out["nan"]["status"] == "error" and out["nan"]["flags"] == ""  # damaged, not silent
    assert re.fullmatch(r"non-finite samples \(NaN or Inf\) in \S*nan\.wav", out["nan"]["error"]), out["nan"]["error"]

