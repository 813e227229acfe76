"""The documentation site builds strictly: `mkdocs build --strict` over `docs/` (with
the API pages read from the docstrings by mkdocstrings) ends without one warning, so a
broken link, a page missing from the nav, a moved module or a bad docstring reference
fails here (mkdocs.yml makes a page left out of the nav and a link to a missing
anchor warnings too). It needs no network: no plugin in mkdocs.yml fetches anything."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def test_the_site_builds_strictly_without_a_warning(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
         str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-4000:]
    assert "WARNING" not in said, said[-4000:]
    pages = {p.relative_to(tmp_path / "site").as_posix()
             for p in (tmp_path / "site").rglob("index.html")}
    assert {"index.html", "doctor/index.html", "api/index.html",
            "benchmarks/index.html"} <= pages

