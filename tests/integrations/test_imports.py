"""``import fivefold`` loads no framework; an integration without its framework names its extra."""

from __future__ import annotations

import subprocess
import sys

import pytest

FRAMEWORKS = ("langgraph", "langchain_core", "llama_index")


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)


def test_importing_fivefold_loads_no_framework() -> None:
    code = (
        "import sys, fivefold, fivefold.integrations\n"
        f"print([m for m in sys.modules if m.split('.')[0] in {FRAMEWORKS!r}])"
    )
    done = run(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("module", "blocked", "extra"),
    [
        ("langgraph", "langgraph", "langgraph"),
        ("langchain", "langchain_core", "langchain"),
        ("llamaindex", "llama_index", "llamaindex"),
    ],
)
def test_a_missing_framework_names_its_extra(module: str, blocked: str, extra: str) -> None:
    # None in sys.modules makes an import of the package fail as if it were not installed.
    code = f"import sys; sys.modules[{blocked!r}] = None; import fivefold.integrations.{module}"
    done = run(code)
    assert done.returncode == 1
    assert f'pip install "fivefold[{extra}]"' in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("ImportError:")
