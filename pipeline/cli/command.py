"""A subcommand of `run_pipeline.py` (`speech-eval`): one module of pipeline/cli/ (or an installed plugin's, named by
the entry point group `speech_eval.commands`) that registers its Command. The usage line and the help list the
registered commands; running the pipeline itself is what the command line does without one. A built-in command
runs with its own module alone imported (`COMMANDS.own`), so a plugin's command takes a name of its own."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Callable

from pipeline.core.registry import Catalog


@dataclass(frozen=True)
class Command:
    name: str  # what follows the program's name: `compare-runs`
    usage: str  # its arguments, for the usage line: "A B [options]"
    summary: str  # one line: what it is for
    main: Callable[[list[str]], int]  # its arguments after its name → the exit code


COMMANDS = Catalog("pipeline.cli", "speech_eval.commands", "command", skip=("command",))


def program() -> str:
    """The name the user typed: `run_pipeline.py`, or `speech-eval` where pip installed the console command."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return name if name and name not in ("__main__.py", "-c") else "run_pipeline.py"
