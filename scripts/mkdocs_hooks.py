"""MkDocs hooks: the measurement and history files at the repository's root (BENCHMARKS.md,
SCALING.md, CHANGELOG.md) become pages of the site as they are, so the docs link to the one copy
of every figure instead of repeating it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
PAGES = {
    "benchmarks.md": "BENCHMARKS.md",
    "scaling.md": "SCALING.md",
    "changelog.md": "CHANGELOG.md",
}


def on_files(files: Files, *, config: Any) -> Files:
    for page, source in PAGES.items():
        files.append(File.generated(config, page, abs_src_path=str(ROOT / source)))
    return files
