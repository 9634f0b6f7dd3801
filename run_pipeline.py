#!/usr/bin/env python3
"""Entry point: `python run_pipeline.py --help`."""
import sys

from pipeline.cli import main

if __name__ == "__main__":
    sys.exit(main())
