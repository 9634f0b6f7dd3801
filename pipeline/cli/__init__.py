"""Command line: running the pipeline (what it does without a command), and each registered command
(`COMMANDS` in pipeline/cli/command.py; each built-in command is one module of this folder)."""
from __future__ import annotations

import argparse
import errno
import logging
import os
import signal
import sys

from typing import TYPE_CHECKING

from pipeline.cli.command import COMMANDS, program
from pipeline.errors import WRITE_ERRORS, ConfigError, InputError
from pipeline.exec import interrupts
from pipeline.exec.progress import say

if TYPE_CHECKING:
    from pipeline.config.run import Config


def run_parser(every_key: bool = False) -> tuple[argparse.ArgumentParser, list[str]]:
    from pipeline.config import run as config_mod
    from pipeline.core import options
    from pipeline.stages import STAGES

    prog = program()
    shown = "every config key" if every_key else "config keys (the LM's: --help-all)"
    commands = COMMANDS.all()
    p = argparse.ArgumentParser(
        prog=prog, formatter_class=argparse.RawDescriptionHelpFormatter,
        usage=f"{prog} [options]" + "".join(f"\n       {prog} {c.name} {c.usage}" for c in commands),
        epilog=f"{shown} for --set and --config (defaults):\n" + config_keys(every_key),
        description="Train a small GPT on Shakespeare, sample sentences, speak them with TTS voices,\n"
                    "transcribe them with Whisper and score WER with a full alignment breakdown.\n\ncommands "
                    f"({prog} <command> --help):\n" + "\n".join(f"  {c.name:<14} {c.summary}" for c in commands))
    p.add_argument("--help-all", action="store_true", help="this help with every config key, the LM's too")
    p.add_argument("--config", help="TOML config file; presets and flags override it")
    p.add_argument("--preset", action="append", default=[], metavar="NAME",
                   help=f"a config file from configs/ (repeatable): {', '.join(presets())}")
    p.add_argument("--quick", action="append_const", dest="preset", const="quick",
                   help="--preset quick: a smoke test (60 training iterations, 2 samples)")
    p.add_argument("--print-config", action="store_true", help="print the resolved config as TOML and exit")
    p.add_argument("--plan", action="store_true",
                   help="print the stages this config runs (those --stages/--from select), with what each reads, makes "
                        "and depends on, and exit")
    p.add_argument("--stages", help=f"comma-separated subset of: {','.join(STAGES)}")
    p.add_argument("--from", dest="start", choices=STAGES, help="run from this stage on")
    p.add_argument("--force", action="store_true", help="rerun the selected stages even when up to date")
    shortcuts = options.add_flags(p.add_argument_group("config shortcuts (each sets one config key)"),
                                  config_mod.Config())
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="any config key, e.g. --set train.eval_interval=50 (repeatable)")
    return p, shortcuts


def presets() -> list[str]:
    from pipeline.config.presets import names

    return names()


def config_keys(every_key: bool = False) -> str:
    """Each key with its default and meaning; argparse prints an epilog as written (no %-expansion)."""
    from pipeline.config import run as config_mod
    from pipeline.core import options

    return "\n".join(f"  {key} = {default!r}  # {options.help_of(f)}"
                      for key, f, default in options.declared(config_mod.Config())
                      if every_key or key.partition(".")[0] not in options.LM_SECTIONS)


def overrides_from(args: argparse.Namespace, shortcuts: list[str]) -> dict:
    from pipeline.core import options

    values = options.given(args, shortcuts)
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--set {item!r}: expected KEY=VALUE")
        values[key.strip()] = value
    return values


def stopped(stop: KeyboardInterrupt) -> int:
    """One line on what was kept, then out at once (128 + the signal: 130 for Ctrl-C, 143 for SIGTERM), without
    waiting for decodes in flight: their results would be dropped anyway, and every write is atomic."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)  # a second Ctrl-C must not interrupt the goodbye
    stop = interrupts.interrupted(stop)
    if stop.kept:
        line = f"interrupted: {stop.kept}; run the same command to continue"
    elif stop.stage:
        line = (f"interrupted during {stop.stage}: every stage and item finished before it is kept; run the same "
                "command to continue")
    else:
        line = "interrupted"
    say(line, level=logging.WARNING)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(128 + (interrupts.received[0] if interrupts.received else stop.signum))


INTERNAL_ERROR = 70  # EX_SOFTWARE (sysexits.h): a fault of this tool, never a verdict on a run


def main(argv: list[str] | None = None) -> int:
    previous = interrupts.install()
    try:
        return _main(argv)
    except KeyboardInterrupt as stop:
        return stopped(stop)
    except BrokenPipeError:
        return closed_pipe()
    except Exception:
        return internal_error()
    finally:
        interrupts.restore(previous)


def internal_error() -> int:
    """A fault of this tool, not of the input: its own exit code, so that no script reads it as a verdict (1 is
    "rows failed" for a run, "B is worse" for compare-runs), and what to report."""
    import traceback

    say(f"internal error (exit {INTERNAL_ERROR}): a fault of this tool, not a result of your run or a verdict. "
        "Files already written are complete, and a rerun continues from them. Please report it, with the command "
        f"line you ran and this traceback:\n{traceback.format_exc().rstrip()}")
    return INTERNAL_ERROR


def closed_pipe() -> int:
    """The reader of our output went away (`--plan | head`): end quietly, as a Unix tool killed by SIGPIPE does
    (exit 141), and let nothing more be written to the closed pipe, Python's flush at exit included."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 128 + signal.SIGPIPE


def _main(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and not argv[0].startswith("-"):
        command = COMMANDS.own(argv[0]) or (COMMANDS.get(argv[0]) if argv[0] in COMMANDS else None)
        if command:
            return command.main(argv[1:])
    from pipeline.cli import several
    from pipeline.config import run as config_mod

    parser, shortcuts = run_parser()
    args = parser.parse_args(argv)
    if args.help_all:
        run_parser(every_key=True)[0].print_help()
        return 0
    try:
        overrides = overrides_from(args, shortcuts)
        parts = several.parts(overrides)
        cfg = None if parts else config_mod.load(args.config, overrides, args.preset)
        stages = [s.strip() for s in args.stages.split(",")] if args.stages else None
        from pipeline.stages import STAGES
        for s in stages or []:
            if s not in STAGES:
                raise ConfigError(f"--stages: unknown stage {s!r}; allowed: {', '.join(STAGES)}")
    except ConfigError as e:
        print(f"{'input' if isinstance(e, InputError) else 'config'} error: {e}", file=sys.stderr)
        return 2
    if parts:
        return several.run(parts, lambda values: config_mod.load(args.config, values, args.preset),
                           lambda cfg: _run(cfg, args, stages), tabulate=not (args.print_config or args.plan))
    return _run(cfg, args, stages)


def _run(cfg: Config, args: argparse.Namespace, stages: list[str] | None) -> int:
    """The run of one config: its plan or config printed, or its stages run; the exit code."""
    if args.print_config:
        from pipeline.config.run import to_toml

        print(to_toml(cfg), end="")
        return 0
    from pipeline.core import lock
    from pipeline.run import runner
    from pipeline.stages import ALL

    if args.plan:
        try:
            print(runner.describe(cfg, ALL, stages, args.start))
        except ConfigError as e:
            print(f"config error: {e}", file=sys.stderr)
            return 2
        return 0

    try:
        return runner.run(cfg, ALL, stages, args.start, force=args.force)
    except lock.RunInUse as e:
        print(f"error: {e}", file=sys.stderr)
        return 3
    except (runner.MissingInput, ConfigError) as e:
        say(f"error: {getattr(e, 'cause', None) or e}")  # raised on a Ray actor: the cause, without Ray's wrapping
        return 2
    except OSError as e:
        e = getattr(e, "cause", None) or e
        if e.errno in WRITE_ERRORS:
            where = e.filename or "the output directory"
            fix = ("Raise the file-size limit (ulimit -f)" if e.errno == errno.EFBIG
                   else "Free some disk space or make it writable")
            say(f"error: cannot write {where} ({e.strerror}). {fix} (or pick other --set "
                "results_dir/speech_dir/models_dir); files already written are complete, and a rerun continues "
                "from them.")
        else:
            say(f"error: {e}")
        return 4


def entry() -> None:
    """The `speech-eval` console command: the same as `python run_pipeline.py`."""
    sys.exit(main())
