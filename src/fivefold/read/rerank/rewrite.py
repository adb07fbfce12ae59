"""Query rewrites for low-specificity queries: 2-3 alternative phrasings, each searched.

Offline by default: pseudo-relevance feedback. Each of the first-pass top documents lends the
query its rarest words that the query lacks ("how did I handle authentication?" + "login
identity tokens"), so the rewrite's embedding leans towards the neighbourhood the first pass
found. With ``rewrite.endpoint`` set, an OpenAI-compatible chat endpoint writes the phrasings
instead, and any failure of it falls back to feedback.
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence

from fivefold.config import RewriteConfig
from fivefold.text import content_terms

Frequencies = Callable[[Sequence[str]], tuple[int, dict[str, int]]]
PROMPT = (
    "What are alternative ways someone might ask about the same information as this query? "
    "Answer with {count} rephrasings, one per line, nothing else.\n\nQuery: {query}"
)


def feedback_rewrites(
    focus: str, documents: Sequence[str], *, frequencies: Frequencies, config: RewriteConfig
) -> tuple[str, ...]:
    query_terms = set(content_terms(focus))
    per_doc = [
        [t for t in content_terms(doc) if t not in query_terms and not t.isdigit() and len(t) > 2]
        for doc in documents[: config.feedback_docs]
    ]
    candidates = sorted({t for terms in per_doc for t in terms})
    if not candidates:
        return ()
    total, df = frequencies(candidates)

    def rarity(term: str) -> float:
        return math.log((total + 1) / (df.get(term, 0) + 1))

    rewrites: list[str] = []
    for terms in per_doc:
        best = sorted(dict.fromkeys(terms), key=lambda t: (-rarity(t), t))[
            : config.terms_per_rewrite
        ]
        if best:
            rewrite = f"{focus} {' '.join(best)}"
            if rewrite not in rewrites:
                rewrites.append(rewrite)
    return tuple(rewrites[: config.count])


class RewriteError(Exception):
    """The rewrite endpoint failed; the caller falls back to feedback rewrites."""


def llm_rewrites(focus: str, config: RewriteConfig) -> tuple[str, ...]:
    """Ask an OpenAI-compatible ``/chat/completions`` endpoint for rephrasings."""
    if not config.endpoint:
        raise RewriteError("no rewrite endpoint configured")
    body = {
        "model": config.model or "default",
        "messages": [{"role": "user", "content": PROMPT.format(count=config.count, query=focus)}],
        "temperature": 0,
    }
    request = urllib.request.Request(
        config.endpoint.rstrip("/") + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={
            "Content-Type": "application/json",
            **({"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}),
        },
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=config.timeout_seconds) as response:
            payload = json.loads(response.read().decode("utf-8"))
        text = payload["choices"][0]["message"]["content"]
    except (OSError, urllib.error.URLError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise RewriteError(f"rewrite endpoint failed: {exc}") from exc
    lines = [line.strip(" -*0123456789.\t") for line in str(text).splitlines()]
    return tuple(dict.fromkeys(line for line in lines if line and line != focus))[: config.count]
