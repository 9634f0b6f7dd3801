"""Listening-test kinds: one file here each (mos.py, smos.py, cmos.py, ab.py, ab_np.py), or a plugin's module named
by the entry point group `speech_eval.listening`, registering an instance of a `Kind` (base.py) that carries its
own behaviour."""
from pipeline.core.registry import Catalog
from pipeline.listen.kinds.base import Kind

__all__ = ["KINDS", "Kind"]

KINDS = Catalog("pipeline.listen.kinds", "speech_eval.listening", "listen --kind")
