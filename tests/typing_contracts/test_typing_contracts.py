"""Run pyright on ``contracts.py`` and require errors on exactly the lines marked ``expect-error``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

from tests.conftest import REPO_ROOT

CONTRACTS = Path(__file__).with_name("contracts.py")
MARKER = "# expect-error"


def _expected_lines() -> set[int]:
    lines = CONTRACTS.read_text(encoding="utf-8").splitlines()
    return {number for number, line in enumerate(lines, start=1) if line.rstrip().endswith(MARKER)}


def _pyright_error_lines(config_dir: Path) -> set[int]:
    # pyproject excludes this directory from the main run (and pyright honours that even for files named on the
    # command line), so check it under a throwaway strict config; pyright wants paths relative to the config.
    config = {
        "include": [os.path.relpath(CONTRACTS, config_dir)],
        "typeCheckingMode": "strict",
        "pythonVersion": "3.11",
        "extraPaths": [os.path.relpath(REPO_ROOT, config_dir)],
    }
    config_file = config_dir / "pyrightconfig.json"
    config_file.write_text(json.dumps(config), encoding="utf-8")
    completed = subprocess.run(
        [
            str(Path(sys.executable).with_name("pyright")),
            "--outputjson",
            "--pythonpath",
            sys.executable,
            "--project",
            str(config_file),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
    )
    report = cast("dict[str, Any]", json.loads(completed.stdout))
    assert report["summary"]["filesAnalyzed"] == 1
    diagnostics = cast("list[dict[str, Any]]", report["generalDiagnostics"])
    return {int(d["range"]["start"]["line"]) + 1 for d in diagnostics if d["severity"] == "error"}


def test_pyright_rejects_exactly_the_marked_contract_violations(tmp_path: Path) -> None:
    expected = _expected_lines()
    assert len(expected) == 7
    assert _pyright_error_lines(tmp_path) == expected
