"""Progress bars for every long loop: live on a terminal, a line every 30 s in a log file."""
from __future__ import annotations

import sys

from tqdm import tqdm


def bar(iterable=None, **kwargs) -> tqdm:
    interactive = sys.stderr.isatty()
    return tqdm(iterable, mininterval=0.1 if interactive else 30.0, dynamic_ncols=interactive, **kwargs)
