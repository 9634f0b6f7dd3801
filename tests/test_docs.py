"""The documentation's promises that a test can hold: the README stays short enough to read, and every relative
link between the pages (a file, and a heading in it) resolves."""
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


def test_every_registered_choice_is_in_the_docs_that_list_its_kind():
    """The lists the docs keep of each registry (formats, measures, normalizers, commands, recipes, listening-test
    kinds) hold every entry the registry has."""
    from pipeline.cli.command import COMMANDS
    from pipeline.config import recipes
    from pipeline.io import manifests
    from pipeline.listen.kinds import KINDS
    from pipeline.measures.base import MEASURES
    from pipeline.scoring.normalize import NORMALIZERS

    readme, manifest_doc = (ROOT / "README.md").read_text(), (ROOT / "docs" / "manifests.md").read_text()
    stats = (ROOT / "docs" / "statistics.md").read_text()
    missing = [f"docs/manifests.md: format {f}" for f in manifests.formats() if f"| `{f}` |" not in manifest_doc]
    missing += [f"docs/statistics.md: measure {m}" for m in MEASURES.names() if f"| `{m}` |" not in stats]
    missing += [f"docs/statistics.md: normalizer {n}" for n in NORMALIZERS if f"`{n}`" not in stats]
    missing += [f"README.md: command {c}" for c in COMMANDS.names() if f"run_pipeline.py {c}" not in readme]
    missing += [f"docs/manifests.md: recipe {r}" for r in recipes.names() if f"--preset {r}" not in manifest_doc]
    listening = (ROOT / "docs" / "listening.md").read_text()
    missing += [f"docs/listening.md: kind {k}" for k in KINDS.names() if f"| `{k}` |" not in listening]
    assert not missing, missing
