"""The figures the reliability tests measure, for docs/reliability.md.

Set ``SESSIONCLUSTER_RELIABILITY_FIGURES=path.json`` to have them written at the end of the run
(``SESSIONCLUSTER_FULL_RELIABILITY=1`` for the full versions of the kill loop, load and soak).
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterator

import pytest

FIGURES_ENV = "SESSIONCLUSTER_RELIABILITY_FIGURES"


@pytest.fixture(scope="session")
def figures() -> Iterator[dict[str, Any]]:
    """A dict each test puts its measured figures in, under its own name."""
    out: dict[str, Any] = {"full": os.environ.get("SESSIONCLUSTER_FULL_RELIABILITY") == "1"}
    yield out
    path = os.environ.get(FIGURES_ENV)
    if path:
        with open(path, "w") as f:
            json.dump(out, f, indent=1, default=str)
