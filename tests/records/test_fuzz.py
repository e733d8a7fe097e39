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
    (tmp_path / "corpus").mkdir()
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "fuzz_differential.py"),
            f"-runs={runs}",
            "-seed=1",
            # libFuzzer's RSS limit reads the peak RSS (ru_maxrss), which Linux carries across
            # exec from the parent: after a 2 GB test process the run starts "out of memory".
            "-rss_limit_mb=0",
            f"-artifact_prefix={tmp_path}/",
            str(tmp_path / "corpus"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert f"Done {runs} runs" in output
    assert len(list((tmp_path / "corpus").iterdir())) > 10  # seeds plus what coverage added
