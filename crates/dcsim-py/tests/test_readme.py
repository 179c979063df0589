"""The README's Python snippet runs as written (from a folder holding the scenarios)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from conftest import REPO


def test_readme_python_snippet_runs(tmp_path):
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Python") :]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    (tmp_path / "scenarios").symlink_to(REPO / "scenarios")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                       env={**os.environ, "PYTHONUNBUFFERED": "1"}, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "results/ws-0.6/flows.parquet").exists()
    assert (tmp_path / "results/sweep/websearch-star/index.parquet").exists()
