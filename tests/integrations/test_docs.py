"""Every Python example of docs/integrations.md runs, as written, against the real frameworks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", DOC.read_text(), re.DOTALL | re.MULTILINE)


def test_the_page_has_an_example_per_framework() -> None:
    text = "\n".join(BLOCKS)
    for module in ("langgraph", "langchain", "llamaindex"):
        assert f"from fivefold.integrations.{module} import" in text


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{n}" for n in range(len(BLOCKS))])
def test_the_example_runs(code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the examples open "memory.db" where they run
    exec(compile(code, str(DOC), "exec"), {"__name__": "__docs__"})
    assert (tmp_path / "memory.db").exists()
