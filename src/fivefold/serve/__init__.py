"""``fivefold serve``: the engine over HTTP (a versioned JSON API, MCP at ``/mcp``, a web page
that explains a recall at ``/``), behind API keys that fix each caller's namespace.

Needs the ``serve`` extra (FastAPI, uvicorn, prometheus-client, the MCP SDK).
"""
