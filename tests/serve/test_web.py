"""The web page in a real headless Chromium (Debian's package, driven by Playwright): a query
renders its results with scores, per-retriever ranks, the plan with its reasons and the fusion
terms; the memory browser lists and forgets. The screenshot goes into the docs."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.serve.conftest import Server

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# CI installs Chromium and sets this, so there the test can never be skipped.
REQUIRED = os.environ.get("FIVEFOLD_REQUIRE_BROWSER") == "1"
# FIVEFOLD_SCREENSHOT=1 refreshes the docs' picture of the page; otherwise it goes to tmp.
DOCS = Path(__file__).resolve().parents[2] / "docs"
# The flags a closed network needs: no background calls home, no sandbox as root.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def page() -> Iterator[Any]:
    if CHROMIUM is None:
        if REQUIRED:
            pytest.fail("Chromium is required here (FIVEFOLD_REQUIRE_BROWSER=1) but not installed")
        pytest.skip("Chromium is not installed (apt install chromium); CI installs it")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            yield browser.new_page(viewport={"width": 1280, "height": 900})
        finally:
            browser.close()


def test_a_query_renders_plan_scores_ranks_and_fusion_terms(
    page: Any, keyed_server: Server, tmp_path: Path
) -> None:
    stamp = uuid.uuid4().hex[:6]
    facts = [
        f"Priya recommended Postgres for Project Kestrel {stamp}",
        "The Kestrel launch is planned for March",
        "Dana prefers oat milk in her coffee",
    ]
    for fact in facts:
        made = httpx.post(
            keyed_server.url + "/v1/memories",
            json={"content": fact},
            headers=keyed_server.headers("beta"),
        )
        assert made.status_code == 201
    page.goto(keyed_server.url + "/")
    page.fill("#key", keyed_server.tokens["beta"])
    page.dispatch_event("#key", "change")
    page.fill("#query", "what database did Priya recommend for Kestrel?")
    page.click("#search button")
    page.wait_for_selector("#results li")
    first = page.locator("#results li").first
    assert f"Postgres for Project Kestrel {stamp}" in first.locator(".content").inner_text()
    assert float(first.locator(".score").inner_text()) > 0
    legs = first.locator(".leg").all_inner_texts()
    assert legs
    assert all("#" in leg for leg in legs)
    # Each hit's calibrated confidence, the one recall gives it.
    recalled = httpx.post(
        keyed_server.url + "/v1/recall",
        json={"query": "what database did Priya recommend for Kestrel?"},
        headers=keyed_server.headers("beta"),
    ).json()
    sure = {hit["memory"]["id"]: hit["confidence"] for hit in recalled["hits"]}
    shown = first.locator(".confidence").inner_text()
    assert shown == f"confidence {sure[int(first.get_attribute('data-id'))]:.2f}"
    assert page.locator("#results li .confidence").count() == page.locator("#results li").count()
    assert page.locator("#plan-name").inner_text()
    assert page.locator("#reasons li").count() >= 1
    # Every feature code of the plan's reasons is explained, in the legend and its tooltip.
    reason = page.locator("#reasons li", has_text="features ")
    codes = [part.split("=")[0] for part in reason.inner_text().split()[1:]]
    assert codes
    legend = page.locator("#features .feature")
    assert sorted(legend.evaluate_all("nodes => nodes.map(n => n.dataset.code)")) == sorted(codes)
    tooltip = reason.get_attribute("title")
    assert tooltip
    assert "entity density" in tooltip
    assert all(f"{code} " in tooltip for code in codes)
    first.locator("summary").click()
    assert first.locator("table tr").count() == 1 + len(legs)  # one fusion term per retriever
    assert "memories in" in page.locator("#status").inner_text()
    folder = DOCS if os.environ.get("FIVEFOLD_SCREENSHOT") == "1" else tmp_path
    page.screenshot(path=str(folder / "web-page.png"), full_page=True)
    assert (folder / "web-page.png").stat().st_size > 10_000


def _browsed(page: Any, server: Server, content: str) -> tuple[int, Any]:
    """A memory written as tenant "beta", then the page opened with beta's key: its id and
    its row in the memory browser."""
    made = httpx.post(
        server.url + "/v1/memories", json={"content": content}, headers=server.headers("beta")
    ).json()
    page.goto(server.url + "/")
    page.fill("#key", server.tokens["beta"])
    page.dispatch_event("#key", "change")
    page.click("#refresh")
    row = page.locator(f"#memories li[data-id='{made['id']}']")
    row.wait_for()
    return int(made["id"]), row


def test_the_browser_forgets_and_a_bad_key_shows_an_error(page: Any, keyed_server: Server) -> None:
    content = f"A note to forget {uuid.uuid4().hex[:8]}"
    made_id, row = _browsed(page, keyed_server, content)
    assert content in row.inner_text()
    row.locator("button").click()
    row.wait_for(state="detached")
    gone = httpx.get(
        f"{keyed_server.url}/v1/memories/{made_id}", headers=keyed_server.headers("beta")
    )
    assert gone.status_code == 404
    page.fill("#key", "ff_wrong_key")
    page.fill("#query", "anything")
    page.click("#search button")
    page.wait_for_selector("#status.error")
    assert "API key" in page.locator("#status").inner_text()


def test_no_frame_of_the_page_by_either_path(page: Any, keyed_server: Server) -> None:
    """The page is also ``/static/index.html``, which had no framing headers: inside another
    site's invisible frame, a click there forgot a memory (a keyless server)."""
    for path in ("/", "/static/index.html"):
        target = keyed_server.url + path
        page.set_content(f'<iframe src="{target}" width="800" height="600"></iframe>')
        page.wait_for_timeout(500)
        assert all(frame.url != target for frame in page.frames), path
        assert all(frame.url in ("about:blank",) or "error" in frame.url for frame in page.frames)


def test_a_long_unbroken_string_keeps_the_buttons_on_the_page(
    page: Any, keyed_server: Server
) -> None:
    """A URL or a blob in a memory pushed every Forget button and the search box off a
    1280-pixel page (nothing wrapped it)."""
    stamp = uuid.uuid4().hex[:8]
    content = f"The design doc {stamp} is at https://docs.example.com/d/{'AbC1' * 120}/edit"
    _, row = _browsed(page, keyed_server, content)
    page.fill("#query", f"design doc {stamp}")
    page.click("#search button")
    page.wait_for_selector("#results li")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    for button in (row.locator("button"), page.locator("#search button")):
        box = button.bounding_box()
        assert box is not None
        assert box["x"] + box["width"] <= 1280, box


def test_the_page_works_where_the_browser_refuses_it_storage(
    page: Any, keyed_server: Server
) -> None:
    """Storage refused (as a browser blocking it does: reading it throws) stopped the script
    at its first line: no search, no browser."""
    page.add_init_script(
        "Object.defineProperty(window, 'sessionStorage', "
        "{get() { throw new DOMException('refused', 'SecurityError'); }})"
    )
    page.goto(keyed_server.url + "/")
    page.fill("#key", keyed_server.tokens["beta"])
    page.dispatch_event("#key", "change")
    page.fill("#query", "anything at all")
    page.click("#search button")
    page.locator("#status", has_text="memories in").wait_for()


def test_the_key_field_and_a_stale_key_error(
    page: Any, keyed_server: Server, open_server: Server
) -> None:
    """On a server with keys the page said a key was "none on loopback", and the "API key
    required" of the page's first request stayed up after the key was typed and worked."""
    page.goto(keyed_server.url + "/")
    page.wait_for_selector("#status.error")
    assert "API key" in page.locator("#status").inner_text()
    placeholder = page.get_attribute("#key", "placeholder")
    assert placeholder == "required by this server"
    content = f"A note seen once the key is in {uuid.uuid4().hex[:8]}"
    httpx.post(
        keyed_server.url + "/v1/memories",
        json={"content": content},
        headers=keyed_server.headers("beta"),
    )
    page.fill("#key", keyed_server.tokens["beta"])
    page.dispatch_event("#key", "change")
    page.locator("#memories li", has_text=content).wait_for()
    assert page.locator("#status.error").count() == 0
    assert page.locator("#status").inner_text() == ""
    page.goto(open_server.url + "/")
    page.wait_for_function(
        "document.getElementById('key')?.placeholder === 'none needed on this server'"
    )


def test_a_superseded_hit_says_what_superseded_it_and_when(page: Any, keyed_server: Server) -> None:
    stamp = uuid.uuid4().hex[:6]
    headers = keyed_server.headers("beta")
    old = httpx.post(
        keyed_server.url + "/v1/memories",
        json={"content": f"Ilse {stamp} lives in Graz", "event_at": "2026-01-05"},
        headers=headers,
    ).json()
    new = httpx.post(
        keyed_server.url + "/v1/memories",
        json={
            "content": f"Ilse {stamp} lives in Linz",
            "event_at": "2026-02-10",
            "supersedes": old["id"],
        },
        headers=headers,
    ).json()
    page.goto(keyed_server.url + "/")
    page.fill("#key", keyed_server.tokens["beta"])
    page.dispatch_event("#key", "change")
    page.fill("#query", f"where did Ilse {stamp} live?")
    page.click("#search button")
    note = page.locator(f"#results li[data-id='{old['id']}'] .superseded")
    note.wait_for()
    assert note.inner_text() == f"superseded by #{new['id']} (2026-02-10)"
    assert page.locator(f"#results li[data-id='{new['id']}'] .superseded").count() == 0
