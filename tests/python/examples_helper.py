"""The examples/ scripts as modules, for tests that run them on other devices or processes."""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def example(name: str):
    """examples/<name>.py imported as a module (sys.path left as it was)."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.pop(0)
