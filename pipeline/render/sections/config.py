"""What the run read: its inputs and the config its stages depend on, and the versions of what ran."""
from __future__ import annotations

import html
import json

from pipeline.render.html import SECTIONS, Page, Section


def render(page: Page) -> str:
    return (f"<h2>Config and versions</h2>\n"
            f"<pre>{html.escape(json.dumps({**page.config, 'versions': page.versions}, indent=2))}</pre>")


SECTIONS.register(Section("config", 100, (), render))
