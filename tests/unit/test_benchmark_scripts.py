"""Every benchmark script imports and parses its options (CI runs the scripts themselves only
with SESSIONCLUSTER_CI_BENCHMARKS=1: their smoke run takes ~25 minutes on 2 cores)."""

from __future__ import annotations

import importlib

import pytest

from benchmarks.__main__ import SCRIPTS


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_benchmark_script_imports_and_takes_quick_and_json(name: str,
                                                              capsys: pytest.CaptureFixture[str]
                                                              ) -> None:
    module = importlib.import_module(f"benchmarks.{name}")
    with pytest.raises(SystemExit) as exit_info:
        module.main(["--help"])
    assert exit_info.value.code == 0
    usage = capsys.readouterr().out
    assert "--quick" in usage and "--json" in usage
