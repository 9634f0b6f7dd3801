"""Your own models: any Whisper size or path, any Piper voice, from the libraries' own caches, keyed by content.

No hub can be reached here, so the caches are laid out by hand exactly as the libraries write them, holding copies
of the bundled weights, and the real lookup code finds them."""
import hashlib
import os
import shutil
import time
from pathlib import Path

import pytest

from pipeline.asr import base, sources, weights
from pipeline.core import store
from pipeline.core.source import ModelDamaged
from pipeline.tts import base as tts
from tests.helpers import NO_MEASURES, cli

REVISION = "d2c6f5b7e8a94c1b0f3e2d1c0b9a8f7e6d5c4b3a"


def hub_layout(root: Path, repo: str, model_dir: Path) -> Path:
    """A Hugging Face cache as huggingface_hub writes it: blobs named by sha256, a snapshot of symlinks, refs/main."""
    repo_dir = root / "hub" / f"models--{repo.replace('/', '--')}"
    snapshot = repo_dir / "snapshots" / REVISION
    (repo_dir / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    for f in model_dir.iterdir():
        sha = hashlib.sha256(f.read_bytes()).hexdigest()
        shutil.copyfile(f, repo_dir / "blobs" / sha)
        (snapshot / f.name).symlink_to(Path("..") / ".." / "blobs" / sha)
    (repo_dir / "refs").mkdir()
    (repo_dir / "refs" / "main").write_text(REVISION)
    return root


@pytest.fixture(scope="module")
def tiny_dir(models_dir) -> Path:
    return weights.ct2_dir("tiny.en", models_dir)


@pytest.fixture
def hf_home(tmp_path, tiny_dir, monkeypatch) -> Path:
    """HF_HOME holding Systran/faster-whisper-small, whose files are tiny.en's; no network."""
    home = hub_layout(tmp_path / "hf", "Systran/faster-whisper-small", tiny_dir)
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return home


def texts(engine: str, speech, models_dir) -> list[str]:
    return [d.text for d in base.load(engine, base.ASRConfig(threads=1), str(models_dir)).transcribe(speech)]


def test_a_size_is_found_in_the_hugging_face_cache_and_transcribes(hf_home, models_dir, piper_speech):
    source = base.resolve("faster-whisper:small", base.ASRConfig(), str(models_dir))
    assert source.found == "hugging face cache" and source.repo == "Systran/faster-whisper-small"
    assert source.revision == REVISION and source.multilingual is False
    assert Path(source.path) == hf_home / "hub" / "models--Systran--faster-whisper-small" / "snapshots" / REVISION
    _, speech = piper_speech
    small = texts("faster-whisper:small", speech, models_dir)
    assert small == texts("faster-whisper:tiny.en", speech, models_dir)
    assert "question" in small[1].lower()


def test_openai_whisper_converts_a_ctranslate2_copy_of_any_size(hf_home, models_dir, piper_speech):
    source = base.resolve("openai-whisper:small", base.ASRConfig(), str(models_dir))
    assert source.found == "hugging face cache (CTranslate2, converted)"
    _, speech = piper_speech
    assert texts("openai-whisper:small", speech, models_dir) == texts("openai-whisper:tiny.en", speech, models_dir)


def test_an_openai_whisper_checkpoint_by_path_equals_the_bundled_route(models_dir, tiny_dir, piper_speech, tmp_path):
    pt = tmp_path / "my-whisper.pt"
    shutil.copyfile(weights.openai_checkpoint(tiny_dir, models_dir), pt)
    source = base.resolve(f"openai-whisper:{pt}", base.ASRConfig(), str(models_dir))
    assert source.found == "path" and source.files == (str(pt),) and source.multilingual is False
    _, speech = piper_speech
    assert texts(f"openai-whisper:{pt}", speech, models_dir) == texts("openai-whisper:tiny.en", speech, models_dir)


def test_a_source_is_its_content_wherever_it_lies(models_dir, tiny_dir, tmp_path):
    copy = shutil.copytree(tiny_dir, tmp_path / "copy")
    original = base.resolve("faster-whisper:tiny.en", base.ASRConfig(), str(models_dir))
    copied = base.resolve(f"faster-whisper:{copy}", base.ASRConfig(), str(models_dir))
    assert copied.found == "path" and copied.content(models_dir) == original.content(models_dir)
    with open(copy / "model.bin", "r+b") as f:  # one byte of the weights
        f.seek(copy.joinpath("model.bin").stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 1]))
    assert copied.content(models_dir) != original.content(models_dir)


def test_a_bare_name_is_a_name_even_beside_a_folder_of_that_name(tmp_path, models_dir, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny.en").mkdir()
    assert base.resolve("faster-whisper:tiny.en", base.ASRConfig(), str(models_dir)).found == "package"
    with pytest.raises(ModelDamaged, match="model.bin is missing"):  # written as a path, it is one
        base.resolve("faster-whisper:./tiny.en", base.ASRConfig(), str(models_dir))


def test_the_header_walk_reads_shapes_and_finds_a_truncated_model(tiny_dir, tmp_path):
    shapes = sources.ct2_shapes(tiny_dir / "model.bin")
    assert shapes["decoder/embeddings/weight"] == (51864, 384)
    cut = tmp_path / "model.bin"
    cut.write_bytes((tiny_dir / "model.bin").read_bytes()[:5_000_000])
    with pytest.raises(ModelDamaged, match="truncated"):
        sources.ct2_shapes(cut)


def test_whispers_own_model_table_is_read_without_importing_it():
    import whisper

    assert sources.whisper_urls() == whisper._MODELS


def test_a_name_that_can_only_be_a_typo_is_refused_with_the_sizes():
    from pipeline.errors import ConfigError

    with pytest.raises(ConfigError, match="large-v3"):
        base.ENGINES.check("faster-whisper:huge")
    with pytest.raises(ConfigError, match="large-v3-turbo"):
        base.ENGINES.check("openai-whisper:Systran/faster-whisper-small")
    base.ENGINES.check_all(["faster-whisper:large-v3", "faster-whisper:org/repo", "openai-whisper:turbo"])


def test_a_piper_voice_by_name_is_found_in_the_voice_folders(tmp_path, models_dir):
    joe = tts.resolve("piper:joe")
    folder = tmp_path / "voices"
    folder.mkdir()
    for f in joe.files:
        shutil.copyfile(f, folder / Path(f).name.replace("en_US-joe-medium", "en_US-other-medium"))
    found = tts.resolve("piper:en_US-other-medium", tts.TTSConfig(piper_dirs=[str(folder)]), str(models_dir))
    assert found.found == "folder" and found.content(models_dir) == joe.content(models_dir)


# --- as a user runs it -----------------------------------------------------------------------------------

@pytest.mark.slow
def test_own_models_by_path_and_cache_run_keyed_by_content(tmp_path, models_dir, tiny_dir):
    home = hub_layout(tmp_path / "hf", "Systran/faster-whisper-small", tiny_dir)
    env = {"HF_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    whisper_copy = shutil.copytree(tiny_dir, tmp_path / "whisper-copy")
    voice = tmp_path / "my-voice.onnx"
    for f, name in zip(tts.resolve("piper:joe").files, (voice.name, voice.name + ".json")):
        shutil.copyfile(f, tmp_path / name)
    (tmp_path / "s.txt").write_text("To be, or not to be, that is the question.\nAll the world's a stage.\n")
    args = ["--sentences", "s.txt", "--voices", f"piper:joe,piper:{voice}",
            "--asr", f"faster-whisper:small,faster-whisper:{whisper_copy}", *NO_MEASURES]
    first = cli(tmp_path, *args, models=models_dir, env={**os.environ, **env}, check=False)
    assert first.returncode == 0, first.stderr[-3000:]
    run = tmp_path / "results" / "default"
    manifest = store.read_json(run / "manifest.json")
    small = manifest["models"]["faster-whisper:small"]
    assert small["found"] == "hugging face cache" and small["revision"] == REVISION
    assert small["repo"] == "Systran/faster-whisper-small"
    assert manifest["models"][f"faster-whisper:{whisper_copy}"]["found"] == "path"
    assert manifest["models"][f"piper:{voice}"]["files"][str(voice)] == \
        manifest["models"]["piper:joe"]["files"][tts.resolve("piper:joe").files[0]]
    rows = store.read_csv(run / "utterances.csv")
    assert len(rows) == 8 and all(r["status"] == "ok" for r in rows)
    by = {(r["sentence_id"], r["voice"], r["asr"]): r["hypothesis"] for r in rows}
    assert all(by[(s, v, "faster-whisper:small")] == by[(s, v, f"faster-whisper:{whisper_copy}")]
               for s, v, _ in by)
    wavs = {r["voice"]: (tmp_path / "results" / "default" / r["audio_path"]).read_bytes() for r in rows
            if r["sentence_id"] == rows[0]["sentence_id"]}
    assert wavs["piper:joe"] == wavs[f"piper:{voice}"]  # the same voice file speaks bit for bit alike

    with open(whisper_copy / "model.bin", "r+b") as f:  # one byte of the copy's weights changes
        f.seek((whisper_copy / "model.bin").stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 1]))
    again = cli(tmp_path, *args, models=models_dir, env={**os.environ, **env}, check=False)
    assert again.returncode == 0, again.stderr[-3000:]
    manifest2 = store.read_json(run / "manifest.json")
    assert "synthesize: up to date" in again.stderr  # the voices did not change
    assert manifest2["stage_results"]["transcribe"]["reused"] == 4  # only the changed model transcribes again
    changed = manifest2["models"][f"faster-whisper:{whisper_copy}"]["files"][str(whisper_copy / "model.bin")]
    assert changed != manifest["models"][f"faster-whisper:{whisper_copy}"]["files"][str(whisper_copy / "model.bin")]


def bad_model_cases(tmp_path: Path, tiny_dir: Path) -> list[tuple[list[str], dict, list[str]]]:
    """(flags, environment, what the message must name) for each model that cannot be used."""
    empty_hf = tmp_path / "empty-hf"
    no_bin = shutil.copytree(tiny_dir, tmp_path / "no-model-bin")
    (no_bin / "model.bin").unlink()
    torn = shutil.copytree(tiny_dir, tmp_path / "torn")
    (torn / "model.bin").write_bytes((tiny_dir / "model.bin").read_bytes()[:3_000_000])
    lone = tmp_path / "lone.onnx"
    shutil.copyfile(tts.resolve("piper:joe").files[0], lone)
    offline = {"HF_HOME": str(empty_hf), "HF_HUB_OFFLINE": "1", "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    torn_download = tmp_path / "xdg-torn" / "whisper" / "base.en.pt"
    torn_download.parent.mkdir(parents=True)
    torn_download.write_bytes(b"PK\x03\x04 half of a download")
    no_network = {"HF_HOME": str(empty_hf), "HF_HUB_OFFLINE": "", "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    return [
        (["--asr", "faster-whisper:large-v3"], offline,
         ["faster-whisper:large-v3", str(empty_hf / "hub"), "HF_HUB_OFFLINE is set", "hf download Systran/faster-whisper-large-v3",
          "whisper/large-v3/"]),
        (["--asr", "faster-whisper:large-v3"], no_network, ["faster-whisper:large-v3", "not reachable", "hf download"]),
        (["--asr", "openai-whisper:small"], offline,
         ["openai-whisper:small", str(tmp_path / "xdg" / "whisper" / "small.pt"), "whisper.load_model('small')"]),
        (["--asr", "openai-whisper:base.en"], {**offline, "XDG_CACHE_HOME": str(tmp_path / "xdg-torn")},
         [str(torn_download), "does not have the SHA256 whisper publishes", "delete it"]),
        (["--asr", f"faster-whisper:{no_bin}"], {}, [str(no_bin / "model.bin"), "is missing"]),
        (["--asr", f"faster-whisper:{torn}"], {}, [str(torn / "model.bin"), "truncated"]),
        (["--voices", f"piper:{lone}"], {}, [str(lone) + ".json", "is missing"]),
        (["--voices", "piper:en_GB-alan-medium"], {}, ["piper.download_voices en_GB-alan-medium", "--data-dir"]),
        (["--language", "fr"], {},  # two problems, both named
         ["English-only", "faster-whisper:tiny.en", "--language en", "piper:joe speaks en_US", "espeak:fr-fr"]),
    ]


@pytest.mark.slow
def test_a_model_that_cannot_be_used_stops_the_run_before_any_work(tmp_path, models_dir, tiny_dir):
    for flags, env, named in bad_model_cases(tmp_path, tiny_dir):
        t0 = time.perf_counter()
        proc = cli(tmp_path, "--asr", "faster-whisper:tiny.en", *flags, models=models_dir, env={**os.environ, **env}, check=False)
        seconds = time.perf_counter() - t0
        assert proc.returncode == 2, (flags, proc.stderr[-2000:])
        assert seconds < 30, (flags, seconds)
        assert "Traceback" not in proc.stderr and ": running" not in proc.stderr, (flags, proc.stderr[-2000:])
        for text in named:
            assert text in proc.stderr, (flags, text, proc.stderr[-2000:])
