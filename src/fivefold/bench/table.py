"""Markdown table cells shared by the benchmark reports: every figure x100, differences signed,
``*`` for p < 0.05, GitHub tables padded to read as plain text too."""

from __future__ import annotations

from collections.abc import Sequence

from fivefold.bench.scoring import Comparison

__all__ = ["delta_cells", "diff", "mark", "p_value", "pct", "signed", "table"]


def delta_cells(comparison: Comparison | None) -> list[str]:
    if comparison is None:
        return ["", ""]
    return [f"{signed(comparison.mean_diff)}{mark(comparison)}", p_value(comparison.p_value)]


def mark(comparison: Comparison | None) -> str:
    return "*" if comparison is not None and comparison.significant else ""


def p_value(value: float) -> str:
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}"


def signed(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:+.1f}"


def diff(value: float | None, reference: float | None) -> float | None:
    return None if value is None or reference is None else value - reference


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub markdown table, columns padded so it also reads well as plain text."""
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    lines = [_row(header, widths), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    lines.extend(_row(cells, widths) for cells in rows)
    return "\n".join(lines)


def _row(cells: Sequence[str], widths: Sequence[int]) -> str:
    return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"
