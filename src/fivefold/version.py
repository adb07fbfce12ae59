"""The package version: one place, read by the package, the server and the MCP server."""

__version__ = "0.1.0"
