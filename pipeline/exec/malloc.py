"""glibc's malloc, tuned for the large tensors of training and transcription."""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os


@functools.cache  # once a process: finding libc runs ldconfig, and every engine load and training asks
def tune_malloc() -> bool:
    """Keep glibc from returning each large freed tensor to the OS and faulting it back in at the next use.

    A training step, and an encoder's pass over a 30 s window, allocate and free tensors of MB to tens of MB;
    glibc serves those with mmap/munmap, or trims them off its heap, and the page faults cost more than much of
    the arithmetic: a training step took 388 ms against about 230 with this (as with tcmalloc), and 32 utterances
    decoded by openai-whisper in bf16 19.5 s against 18.2, by faster-whisper in int8 23.9 s against 22.1 (2-core
    AMD EPYC), for about 300 MB more resident memory. With mmap off and a high trim threshold, freed blocks stay
    in the heap and are reused. Process-wide and idempotent; a no-op where glibc is not the allocator (tcmalloc
    or jemalloc preloaded, macOS)."""
    if "malloc" in os.environ.get("LD_PRELOAD", ""):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4
    return bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, 1 << 30))
