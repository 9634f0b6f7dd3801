"""The shape the code keeps: stages that declare their artifacts and config, one source of every option, typed
records with one CSV reader and writer, one registry for voices and engines."""
import ast
import dataclasses
import random
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from pipeline.asr.base import ENGINES
from pipeline.asr.transcriber import Transcript
from pipeline.io.speech import Speech
from pipeline.lm.sentences import Sentence
from pipeline.scoring.utterances import Confusion, ErrorEvent, GroupSummary, Pair, Results, ScoredUtterance
from pipeline.cli import main
from pipeline.config import run as config
from pipeline.core import options, records
from pipeline.errors import ConfigError
from pipeline.run import runner
from pipeline.scoring.align import align_codes, align_text
from pipeline.scoring.config import ScoreConfig
from pipeline.scoring.evaluate import evaluate
from pipeline.stages import ALL
from pipeline.stages.score import heard
from pipeline.tts.base import VOICES

PIPELINE = Path(__file__).resolve().parents[1] / "pipeline"


def imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            out |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return out


# Each folder of pipeline/ imports only folders before it here: the library at the bottom, the backends and
# statistics above it, the config that composes their sections, the run that orders the stages it is handed, the
# stages, and the command line on top. errors.py sits below everything.
LAYERS = ["errors", "core", "exec", "io", "lm", "tts", "asr", "measures", "scoring", "statistics", "gate", "listen",
          "render", "config", "run", "stages", "cli"]


def test_every_folder_imports_only_the_folders_below_it():
    rank = {name: i for i, name in enumerate(LAYERS)}
    upward = []
    for path in sorted(PIPELINE.rglob("*.py")):
        parts = path.relative_to(PIPELINE).parts
        here = parts[0] if len(parts) > 1 else path.stem
        if here == "__init__":
            continue
        assert here in rank, f"pipeline/{here} has no place in LAYERS"
        for module in imports(path):
            names = module.split(".")
            if names[0] != "pipeline" or len(names) < 2 or names[1] == here or names[1] not in rank:
                continue
            if rank[names[1]] > rank[here]:
                upward.append(f"{path.relative_to(PIPELINE)} imports {module}")
    assert not upward, "\n".join(upward)


def test_a_stage_never_imports_another_stage_or_the_runner():
    for path in (PIPELINE / "stages").glob("*.py"):
        bad = {m for m in imports(path) if m.startswith("pipeline.stages") or m.startswith("pipeline.run.runner")}
        assert not bad, f"{path.name} imports {bad}"


def test_only_the_sources_declarations_ask_where_the_sentences_come_from():
    allowed = {"config/run.py", "run/artifacts.py"}
    for path in PIPELINE.rglob("*.py"):
        if path.relative_to(PIPELINE).as_posix() in allowed:
            continue
        tree = ast.parse(path.read_text())
        declared = {id(n) for k in ast.walk(tree) if isinstance(k, ast.keyword) and k.arg == "runs_when"
                    for n in ast.walk(k.value)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("audio_manifest", "sentences") \
                    and isinstance(node.value, ast.Name) and node.value.id == "cfg" and id(node) not in declared:
                pytest.fail(f"{path.relative_to(PIPELINE)}:{node.lineno} reads cfg.{node.attr}")


@pytest.mark.parametrize("source, stages", [
    ({}, ["prepare", "train", "sample", "attention", "synthesize", "assess", "transcribe", "score", "compare",
          "report"]),
    # the user's sentences or recordings without a trained LM: no attention to show
    ({"sentences": "s.txt"}, ["own_sentences", "synthesize", "assess", "transcribe", "score", "compare", "report"]),
    ({"audio_manifest": "m.csv"}, ["recordings", "assess", "transcribe", "score", "compare", "report"]),
])
def test_every_source_makes_the_sentences_and_the_rest_follows(source, stages, tmp_path):
    cfg = config.Config(**source, models_dir=str(tmp_path))
    plan = runner.plan(cfg, ALL)
    assert [s.name for s in plan] == stages
    made = set()
    for stage in plan:  # every artifact a stage needs is made by a stage before it, or is a user's input
        assert set(stage.reads) <= made | {"corpus", "sentence_file", "audio_manifest"}, stage.name
        made |= set(stage.makes)
    assert {"sentences", "speech", "transcripts", "scores", "statistics", "report"} <= made


def test_plan_shows_the_stages_that_stages_and_from_select(capsys, tmp_path, monkeypatch):
    """`--plan --stages …`/`--from …` is what that run would do, not the whole run; a stage the run has not is
    refused as the run refuses it."""
    monkeypatch.chdir(tmp_path)
    shown = {}
    for flags in (["--stages", "score,report"], ["--from", "transcribe"], ["--from", "train", "--stages", "sample"]):
        assert main(["--plan", *flags]) == 0
        out = capsys.readouterr().out
        shown[flags[-1]] = [line.split(":")[0] for line in out.splitlines() if not line.startswith((" ", "("))]
        assert out.startswith("(left out by --stages/--from")
    assert shown == {"score,report": ["score", "report"], "transcribe": ["transcribe", "score", "compare", "report"],
                     "sample": ["sample"]}
    (tmp_path / "s.txt").write_text("Hello there, friend.\n")
    assert main(["--plan", "--sentences", "s.txt", "--from", "train"]) == 2
    assert "'train' is not part of this run" in capsys.readouterr().err
    assert main(["--plan"]) == 0 and not capsys.readouterr().out.startswith("(")
    assert main(["--plan", "--from", "prepare"]) == 0 and capsys.readouterr().out.startswith("prepare:")
    assert main(["--from", "train", "--stages", "sample", "--quick", "--set", f"models_dir={tmp_path}"]) == 2
    assert "run train first: --from train without --stages, train added to --stages" in capsys.readouterr().err


def leaves(cfg, key):
    """(dotted key, field) of every option under a declared config key."""
    return [(k, f) for k, f, _ in options.declared(cfg) if k == key or k.startswith(key + ".")]


def changed(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, list):
        return value + ["x"]
    return value + "x"


def test_a_stage_key_holds_every_option_of_its_sections_but_the_speed_only_ones():
    """So a new option is one line in its owner's dataclass: it reaches the keys (and the CLI) by itself."""
    cfg = config.Config()
    for stage in runner.plan(cfg, ALL):
        before = runner.config_of(cfg, stage.config)
        for key, f in (leaf for k in stage.config for leaf in leaves(cfg, k)):
            value = cfg
            for part in key.split("."):
                value = getattr(value, part)
            other = options.apply(config.Config(), {key: changed(value)})
            moved = runner.config_of(other, stage.config) != before
            assert moved != bool(f.metadata.get("speed_only")), f"{stage.name}: {key}"


def test_every_option_is_declared_with_help_and_shows_in_help(capsys):
    assert main(["--help-all"]) == 0
    text = capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--help"])
    short = capsys.readouterr().out
    for key, f, _ in options.declared(config.Config()):
        assert f.metadata.get("help"), key
        assert f"  {key} = " in text, key
        # the LM's keys wait behind --help-all; every speech key is in the plain help
        assert (f"  {key} = " in short) != (key.partition(".")[0] in options.LM_SECTIONS), key
        if f.metadata.get("flag"):
            assert f.metadata["flag"] in text
    assert "%%" not in text and "95% CI" in text
    # the speech options come before the LM's
    assert short.index("--voices") < short.index("--iters") and short.index("--normalize") < short.index("--iters")
    from pipeline.io import manifests
    from pipeline.measures.base import MEASURES
    from pipeline.scoring.normalize import NORMALIZERS

    said = " ".join(short.split())  # the choices each registry holds, listed from it
    assert f"one of {', '.join(NORMALIZERS)}" in said
    assert f"({', '.join(MEASURES.default())})" in said
    assert all(f"{f.name}: {' '.join(f.doc.split())}" in said for f in manifests.formats().values())


def test_a_config_is_frozen_and_loading_makes_a_new_one():
    import dataclasses

    base = config.Config()
    cfg = config.load(overrides={"tts.conditions": "clean,noise:snr=5", "device": "auto"})
    assert cfg.tts.conditions == ["clean", "noise:snr=5"] and cfg.device in ("cpu", "cuda")
    assert base.tts.conditions == ["clean"] and base.device == "auto"  # the defaults are untouched
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.tts.seed = 1


def test_choices_are_matched_without_regard_to_case():
    from pipeline.cli import overrides_from, run_parser

    parser, shortcuts = run_parser()
    args = parser.parse_args(["--normalize", "WHISPER", "--executor", "Local"])
    cfg = config.load(overrides=overrides_from(args, shortcuts))
    assert cfg.score.normalize == "whisper" and cfg.executor.kind == "local"


def test_a_preset_is_a_file_and_flags_override_it(capsys):
    assert main(["--quick", "--print-config"]) == 0
    assert "max_iters = 60" in capsys.readouterr().out
    assert main(["--preset", "quick", "--iters", "7", "--print-config"]) == 0
    assert "max_iters = 7" in capsys.readouterr().out
    assert main(["--preset", "huge", "--print-config"]) == 2
    assert "quick" in capsys.readouterr().err


def test_voices_and_engines_share_one_registry(tmp_path):
    from pipeline.core.source import ModelMissing
    from pipeline.tts.base import TTSConfig

    assert {"faster-whisper:…", "openai-whisper:…"} <= set(ENGINES.names()) and "flite:slt" in VOICES.names()
    with pytest.raises(ConfigError, match="tts.voices"):
        VOICES.check("flite:nobody")  # a closed family knows its names when the config is read
    with pytest.raises(ModelMissing, match="piper:nobody"):  # an open one finds out when it looks for the model
        VOICES.resolve("piper:nobody", TTSConfig(), str(tmp_path))


def test_importing_one_backend_directly_does_not_hide_the_others():
    code = ("import pipeline.asr.faster_whisper_trim; from pipeline.asr.base import ENGINES; "
            "ENGINES.check('openai-whisper:tiny.en'); print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PIPELINE.parent)
    assert out.stdout.strip() == "ok", out.stderr


def test_checking_a_config_loads_no_model_library():
    """A rerun with every stage up to date checks the config, every voice and engine name with it, and stops: its
    second, not the seconds of importing torch (a helper module found by the registry once imported it at once)."""
    code = ("import sys; from pipeline.config import run; from pipeline.asr.base import ENGINES; "
            "from pipeline.tts.base import VOICES; run.load(overrides={'device': 'cpu', 'train.precision': 'fp32'}); "
            "ENGINES.names(); VOICES.names(); "
            "print(sorted(m for m in ('torch', 'whisper', 'faster_whisper', 'ctranslate2', 'piper', 'TTS', "
            "'pocketsphinx') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PIPELINE.parent)
    assert out.stdout.strip().splitlines()[-1:] == ["[]"], out.stdout + out.stderr


@pytest.mark.parametrize("cls", [Sentence, Speech, Transcript, ScoredUtterance,
                                 ErrorEvent, Confusion, GroupSummary])
def test_records_round_trip_through_the_one_csv_reader_and_writer(tmp_path, cls):
    rng = random.Random(3)
    hints = typing.get_type_hints(cls)

    def value(name):
        kinds = typing.get_args(hints[name]) or (hints[name],)
        if name in ("status",):
            return "ok"
        if name == "type":
            return "deletion"
        if type(None) in kinds and rng.random() < 0.5:
            return None
        if typing.get_origin(hints[name]) is list:  # written as one ;-separated cell, read back as the list
            kind = typing.get_args(hints[name])[0]
            return [round(rng.random(), 4) if kind is float else rng.choice(["a", "b c"])
                    for _ in range(rng.randint(0, 3))]
        if int in kinds:
            return rng.randint(0, 99)
        if float in kinds:
            return round(rng.random(), 4)
        return rng.choice(["", "a, b", 'say "hi"', "x\ny"])

    rows = [cls(**{n: value(n) for n in records.columns(cls)}) for _ in range(20)]
    records.write_csv(tmp_path / "t.csv", cls, rows)
    assert records.read_csv(tmp_path / "t.csv", cls) == rows
    assert (tmp_path / "t.csv").read_text().splitlines()[0] == ",".join(records.columns(cls))


def test_records_are_checked_on_creation():
    with pytest.raises(ValueError, match="status"):
        Speech(sentence_id="a", voice="piper:joe", condition="clean", audio_path="", audio_seconds=None,
                       tts_seconds=None, status="fine", error="")


def test_a_health_flag_is_declared_once_and_is_a_column_of_summary_csv(tmp_path):
    from pipeline.core import store
    from pipeline.scoring import files as scoring
    from pipeline.scoring.flags import NAMES

    rows = [Pair(sentence_id="1", reference="a b", hypothesis="", level_dbfs=-20.0)]
    results = evaluate(rows)
    scoring.write(results, tmp_path)
    header = list(store.read_csv(tmp_path / "summary.csv")[0])
    assert header[header.index("flagged") + 1:header.index("flagged") + 1 + len(NAMES)] == list(NAMES)
    (summary,) = records.read_csv(tmp_path / "summary.csv", GroupSummary)
    assert summary == results.summary[0] and summary.flag_counts["empty_hypothesis"] == 1


def test_each_alignment_is_kept_as_scoring_found_it_and_read_back_from_the_files(tmp_path):
    from pipeline.core import tables
    from pipeline.scoring import files as scoring

    rng = random.Random(5)
    words = "the king and queen of a far land went home".split()
    rows = [Pair(sentence_id=str(i), reference=" ".join(rng.choices(words, k=rng.randint(0, 8))),
                         hypothesis=" ".join(rng.choices(words, k=rng.randint(0, 8)))) for i in range(300)]
    r = evaluate(rows, ScoreConfig(normalize="none", bootstrap=0))
    scoring.write(r, tmp_path)
    loaded = tables.load(scoring.FILES, tmp_path, Results)
    for u, back in zip(r.utterances, loaded.utterances, strict=True):
        found = align_text(u.reference_normalized, u.hypothesis_normalized)
        assert r.alignment(u) == loaded.alignment(back) == found
        assert r.codes(u) == loaded.codes(back) == align_codes([u.reference_normalized.split()],
                                                                [u.hypothesis_normalized.split()])[0]
        assert (found.hits, found.substitutions, found.deletions, found.insertions) == \
            (u.hits, u.substitutions, u.deletions, u.insertions)


def test_a_worker_returns_typed_results_and_a_cached_record_reads_back_as_the_same_type(tmp_path):
    from pipeline.asr.transcriber import Heard
    from pipeline.tts.speaker import Speaker, Spoken
    from pipeline.tts import base as tts

    cfg = tts.TTSConfig()
    speaker = Speaker(tts.resolve("flite:slt", cfg, str(tmp_path)), cfg)
    spoken, unspeakable = speaker.work(["Now is the winter.", "..."])
    assert isinstance(spoken, Spoken) and spoken.status == "ok" and spoken.samples.dtype.name == "float32"
    assert spoken.audio_seconds == round(len(spoken.samples) / spoken.sr, 4) > 0.5
    assert unspeakable.status == "skipped" and unspeakable.samples is None
    record = spoken.record()
    assert "samples" not in record and "sr" not in record  # the wav holds them; the record holds its sha256
    # what a rerun reads from the cache is what this run computed, less the samples the wav holds
    assert Spoken.from_record({"key": "k", **record}) == dataclasses.replace(spoken, samples=None, sr=0)
    heard = Heard(status="ok", hypothesis="now is the winter", asr_seconds=0.2, audio_sha256="ab", level_dbfs=-3.0,
                  audio_seconds=1.5, node="n", pid=7)
    assert Heard.from_record({"key": "k", **heard.record()}) == heard


def test_records_are_built_by_keyword_and_name_their_utterance_and_group():
    with pytest.raises(TypeError):
        Sentence("l0001", None, "a text", 3, None)
    t = Transcript(sentence_id="l0001", voice="piper:joe", condition="noise:snr=10", asr="faster-whisper:base",
                           audio_path="", audio_seconds=1.0, tts_seconds=0.1, hypothesis="a text", asr_seconds=0.1,
                           status="ok", error="", audio_sha256="", level_dbfs=None)
    assert t.id == "piper-joe-noise-snr10-faster-whisper-base_l0001"
    assert t.group == ("piper:joe", "faster-whisper:base", "noise:snr=10")
    u, = evaluate([heard(t, None, {}, audio_path="")]).utterances
    assert (u.id, u.group) == (t.id, t.group)  # scoring names it as the transcript did


def test_an_utterance_has_one_id_in_the_csvs_the_trn_files_and_pralign(tmp_path):
    from pipeline.core import store
    from pipeline.scoring import files as scoring
    from pipeline.scoring import sclite

    pairs = [Pair(sentence_id="s_0 1", voice="piper:joe", asr="faster-whisper:base", condition="noise:snr=10",
                          reference="a b", hypothesis="a c"),
             Pair(sentence_id="l0002", reference="the king", hypothesis="the king")]
    scoring.write(evaluate(pairs), tmp_path)
    ids = [r["id"] for r in store.read_csv(tmp_path / "utterances.csv")]
    assert ids == ["piper-joe-noise-snr10-faster-whisper-base_s-0-1", "l0002"]
    for name in ("ref.trn", "hyp.trn"):
        assert [uid for uid, _ in sclite.read_trn((tmp_path / name).read_text())] == ids
    assert {r["id"] for r in store.read_csv(tmp_path / "errors.csv")} == {ids[0]}
    assert [line[5:-1] for line in (tmp_path / "pralign.txt").read_text().splitlines()
            if line.startswith("id: ")] == ids


def test_the_stage_order_comes_from_what_stages_read_and_make():
    from pipeline.run.stage import Stage
    from pipeline.stages import in_order

    shuffled = ALL[::-1]
    assert [s.name for s in in_order(shuffled)] == [s.name for s in ALL]
    extra = Stage("surprisal", "a new stage", reads=("scores",), makes=("explanations",), config=(), run=None)
    names = [s.name for s in in_order([*ALL, extra])]
    assert names.index("score") < names.index("surprisal")
    for stage in ALL:  # every stage runs after every stage that makes what it reads
        for name in stage.reads:
            assert all(names.index(m.name) < names.index(stage.name) for m in ALL if name in m.makes), stage.name


def test_a_stage_module_is_named_after_its_stage_and_no_library_module_shares_the_name():
    stage_names = {s.name for s in ALL}  # each named after its module: pipeline/stages/__init__.py checks that
    library = {p.stem for p in PIPELINE.rglob("*.py") if p.parent.name not in ("stages", "cli")} | \
              {p.name for p in PIPELINE.iterdir() if p.is_dir() and p.name != "__pycache__"}  # cli/: the commands
    assert not stage_names & library, stage_names & library


def test_an_artifacts_files_are_declared_once(tmp_path):
    from pipeline.core import tables
    from pipeline.scoring import files as scoring

    results = evaluate([Pair(sentence_id="1", reference="a b", hypothesis="a c")])
    written = scoring.write(results, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(tables.names(scoring.FILES)) == \
        sorted(p.name for p in written)
    loaded = tables.load(scoring.FILES, tmp_path, Results)
    assert [e.type for e in loaded.events] == ["substitution"] and loaded.summary[0].errors == 1
    assert loaded.normalizer == "basic" and loaded.summary == results.summary


def test_every_file_the_suite_starts_first_exists():
    from tests.conftest import LONGEST_FIRST

    here = Path(__file__).parent
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
    assert [name for name in LONGEST_FIRST if not (here / name).is_file()] == []  # a renamed file loses its place
