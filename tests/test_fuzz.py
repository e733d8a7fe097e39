"""A brief differential fuzzing run (atheris): the C++ reader and its Python twin agree on
coverage-guided mutations of real records. bench/fuzz.sh runs libFuzzer with sanitizers longer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO


@pytest.mark.slow
def test_differential_fuzzing_briefly(tmp_path: Path) -> None:
    pytest.importorskip("atheris")
    runs = 20000
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "fuzz_differential.py"),
            f"-runs={runs}",
            "-seed=1",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert f"Done {runs} runs" in output
    assert len(list(tmp_path.iterdir())) > 10  # seeds plus what coverage added
