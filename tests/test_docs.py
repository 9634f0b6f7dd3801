"""The documentation's promises that a test can hold: the README stays short enough to read, and every relative
link between the pages (a file, and a heading in it) resolves."""
import dataclasses
import re
from pathlib import Path

from tests.helpers import ROOT

PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "README.md",
         *sorted((ROOT / "examples").glob("*/README.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchors(page: Path) -> set[str]:
    """GitHub's heading ids: lowercased, punctuation other than - and _ dropped, spaces made hyphens."""
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#{1,6} (.+)$", text, flags=re.M)}


def test_every_relative_link_resolves_to_a_file_and_heading():
    broken = []
    for page in PAGES:
        for target in LINK.findall(page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue  # a web address
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            if not resolved.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)
    assert len(PAGES) > 10


def test_the_readme_is_short_and_starts_with_the_two_commands_and_the_main_options():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 300
    first_screen = "\n".join(text.splitlines()[:80])
    assert "scripts/setup && .venv/bin/python run_pipeline.py" in first_screen
    assert "scripts/setup --test && .venv/bin/python -m pytest -q" in first_screen
    assert "--audio-manifest" in first_screen and "## Main options" in first_screen


def test_the_readme_lists_utterances_csv_columns_as_the_record_declares_them():
    from pipeline.scoring.utterances import ScoredUtterance

    row = next(line for line in (ROOT / "README.md").read_text().splitlines()
               if line.startswith("| `results/default/utterances.csv` |"))
    listed = re.search(r"\): `(id, [^`]+)`, then each measure's columns", row).group(1).split(", ")
    assert listed == [f.name for f in dataclasses.fields(ScoredUtterance) if "columns" not in f.metadata]


def test_every_registered_choice_is_in_the_docs_that_list_its_kind():
    """The lists the docs keep of each registry (formats, measures, normalizers, commands, recipes, listening-test
    kinds, voice and engine families, the statistics' files, health flags, each measure's columns) hold every entry
    the registry has."""
    from pipeline.asr.base import ENGINES
    from pipeline.cli.command import COMMANDS
    from pipeline.config import recipes
    from pipeline.io import manifests
    from pipeline.listen.kinds import KINDS
    from pipeline.measures.base import MEASURES
    from pipeline.scoring import flags
    from pipeline.scoring.normalize import NORMALIZERS
    from pipeline.statistics import STATISTICS
    from pipeline.tts.base import VOICES

    readme, manifest_doc = (ROOT / "README.md").read_text(), (ROOT / "docs" / "manifests.md").read_text()
    stats = (ROOT / "docs" / "statistics.md").read_text()
    missing = [f"docs/manifests.md: format {f}" for f in manifests.formats() if f"| `{f}` |" not in manifest_doc]
    counted = ("one two three four five six seven eight nine ten eleven twelve".split()[len(manifests.formats()) - 1]
               + " formats")
    missing += [f"README.md: the formats counted as {n}" for n in re.findall(r"\b(\w+) formats\b", readme)
                if f"{n} formats" != counted]
    missing += [f"docs/statistics.md: measure {m}" for m in MEASURES.names() if f"| `{m}` |" not in stats]
    rows = {m: next((line for line in stats.splitlines() if line.startswith(f"| `{m}` |")), "")
            for m in MEASURES.names()}
    missing += [f"docs/statistics.md: measure {d.name}'s column {c}" for d in MEASURES.all() for c in d.columns
                if f"`{c}`" not in rows[d.name]]
    missing += [f"docs/statistics.md: flag {f}" for f in flags.NAMES if f"| `{f}` |" not in stats]
    missing += [f"docs/statistics.md: normalizer {n}" for n in NORMALIZERS if f"`{n}`" not in stats]
    missing += [f"README.md: command {c}" for c in COMMANDS.names() if f"run_pipeline.py {c}" not in readme]
    missing += [f"docs/manifests.md: recipe {r}" for r in recipes.names() if f"--preset {r}" not in manifest_doc]
    listening = (ROOT / "docs" / "listening.md").read_text()
    missing += [f"docs/listening.md: kind {k}" for k in KINDS.names() if f"| `{k}` |" not in listening]
    what_you_get = readme[readme.index("## What you get"):readme.index("## Speed")]
    missing += [f"README.md: {s.file} in What you get" for s in STATISTICS.all() if f"{s.file}`" not in what_you_get]
    backends = (ROOT / "docs" / "voices-and-engines.md").read_text()
    missing += [f"docs/voices-and-engines.md: {name}" for name in (*VOICES.names(), *ENGINES.names())
                if f"`{name.split(':')[0]}:" not in backends]
    assert not missing, missing


ARCHITECTURE = ROOT / "docs" / "architecture.md"


def test_the_architecture_doc_lists_the_layers_in_the_order_the_imports_keep():
    from tests.test_architecture import LAYERS

    text = ARCHITECTURE.read_text()
    paragraph = text[text.index("**Layers.**"):].split("The library never knows")[0]
    named = [name.removesuffix(".py") for name in re.findall(r"`([a-z_]+(?:\.py)?)`", paragraph)]
    assert named == LAYERS


def test_the_architecture_docs_plan_is_what_the_default_run_plans():
    """Its abridged `--plan`: the default run's stages in order, each with what it reads, makes and depends on,
    as `--plan` prints them (a line that goes on below is joined to it)."""
    from pipeline.config.run import Config
    from pipeline.run import runner
    from pipeline.stages import ALL

    text = ARCHITECTURE.read_text()
    block = text[text.index("    prepare:    reads"):text.index("Every module of `pipeline/stages/`")]
    entries: list[str] = []
    for line in filter(str.strip, block.splitlines()):
        if re.match(r"    [a-z_]+: ", line):
            entries.append(line)
        else:
            entries[-1] += line
    documented = [re.fullmatch(r"([a-z_]+): reads (.+?) makes (.+?) config (.+)", " ".join(e.split())).groups()
                  for e in entries]
    printed = re.findall(r"^([a-z_]+): .*\n    reads  (.*)\n    makes  (.*)\n    config (.*)$",
                         runner.describe(Config(), ALL), re.M)
    assert documented == [(name, reads, re.sub(r" \([^)]*\)", "", makes), config)  # `--plan` names each file
                          for name, reads, makes, config in printed]


def test_the_architecture_doc_places_every_config_section_in_the_module_that_owns_it():
    from pipeline.config.run import Config

    text = ARCHITECTURE.read_text()
    paragraph = text[text.index("**One source for every option.**"):text.index("`config/run.py` only")]
    wrong = []
    for section in dataclasses.fields(Config):
        if not dataclasses.is_dataclass(section.default_factory):
            continue  # a key of the run itself, not a section
        owner = section.default_factory.__module__.removeprefix("pipeline.").replace(".", "/") + ".py"
        named = re.search(rf"`{section.name}`[^;]*?\sin\s`([a-z_/]+\.py)`", paragraph)
        if not named or named.group(1) != owner:
            wrong.append(f"{section.name}: {named and named.group(1)}, not {owner}")
    assert not wrong, wrong


def test_every_name_the_architecture_doc_places_in_a_module_is_defined_there():
    """`Speech` (`io/speech.py`), `Rating` in `mos.py`, `render/html.py` `Page`: each such name is the module's own
    (a module named by its file alone is any module of that name; a config section has its own test above)."""
    import importlib

    text = ARCHITECTURE.read_text()
    placed = [r"`(?P<name>[A-Z][A-Za-z_]*|[a-z_]+\(\))` (?:\(|in )`(?:pipeline/)?(?P<path>[a-z_/]+)\.py`",
              r"`(?:pipeline/)?(?P<path>[a-z_/]+)\.py` `(?P<name>[A-Za-z_]+)`"]
    wrong, checked = [], 0
    for pattern in placed:
        for m in re.finditer(pattern, text):
            name, path = m.group("name").removesuffix("()"), m.group("path")
            modules = [".".join(f.relative_to(ROOT).with_suffix("").parts)
                       for f in (ROOT / "pipeline").rglob(f"{path.rsplit('/', 1)[-1]}.py") if f.match(f"{path}.py")]
            checked += 1
            if not any(hasattr(importlib.import_module(m), name) for m in modules):
                wrong.append(f"{name} in {path}.py")
    assert not wrong, wrong
    assert checked > 10


def test_the_architecture_doc_names_every_module_of_every_folder():
    """The tree of docs/architecture.md: each folder of pipeline/ with every module in it (a module of a
    registry's package by its name; the one-file extension points are named by their folder), every preset of
    configs/ and every benchmark of bench/."""
    text = ARCHITECTURE.read_text()
    tree = text[text.index("    pipeline/\n"):text.index("    configs/")]
    folders = {m.group(1): m.start() for m in re.finditer(r"^      ([a-z_]+)/ ", tree, re.M)}
    missing = []
    for folder in sorted(p for p in (ROOT / "pipeline").iterdir() if p.is_dir() and p.name != "__pycache__"):
        if folder.name not in folders:
            missing.append(f"pipeline/{folder.name}/")
            continue
        start = folders[folder.name]
        entry = tree[start:min([s for s in folders.values() if s > start] or [len(tree)])]
        missing += [f"pipeline/{folder.name}/{m.name}" for m in sorted(folder.glob("*.py"))
                    if m.name != "__init__.py" and m.name not in entry and m.stem not in entry]
    rest = text[text.index("    configs/"):text.index("**A change that must not change results**")]
    missing += [f"{f.parent.name}/{f.name}" for pattern in ("configs/*.toml", "bench/*.py")
                for f in sorted(ROOT.glob(pattern)) if f.name not in rest]
    assert not missing, missing


def test_each_extension_point_folder_holds_one_registered_thing_a_file():
    """What the table of extension points promises: every module of a registry's folder registers (or declares)
    one thing of its kind, so adding one is adding a file."""
    import ast

    checks = {"pipeline/statistics": "STATISTICS.register", "pipeline/render/sections": "SECTIONS.register",
              "pipeline/listen/kinds": "KINDS.register", "pipeline/stages": "STAGE = Stage(",
              "pipeline/io/manifests": "FORMAT = Format(", "pipeline/cli": "COMMANDS.register"}
    helpers = {"pipeline/io/manifests": {"base"}, "pipeline/cli": {"command", "several"}, "pipeline/listen/kinds": {"base"}}
    wrong = []
    for folder, call in checks.items():
        for module in sorted((ROOT / folder).glob("*.py")):
            if module.stem == "__init__" or module.stem in helpers.get(folder, set()):
                continue
            source = module.read_text()
            ast.parse(source)
            if source.count(call) != 1:
                wrong.append(f"{folder}/{module.name}: {source.count(call)} × {call}")
    measures = ROOT / "pipeline" / "measures"
    for module in sorted(measures.glob("*.py")):
        # the interface, the worker, the calibration, and a measure's private modules (_name.py)
        helper = module.stem in ("__init__", "base", "assessor", "calibration") or module.stem.startswith("_")
        if not helper and module.read_text().count("MEASURES.register(") != 1:
            wrong.append(f"pipeline/measures/{module.name}: not one MEASURES.register")
    assert not wrong, wrong
