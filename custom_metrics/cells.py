"""Table cells made safe for the formats the suite writes: CSV and Markdown.

Why one module: every table holds the user's names (model folders, adapters, systems,
metrics, annotators), and a name is data, never markup or a formula. Each writer
escaping on its own is how one forgets (meta-eval's Markdown once split a system
``B|C`` into two cells; every CSV once let ``=HYPERLINK(...)`` run in a spreadsheet).

* :func:`csv_cell`: a cell a spreadsheet would run as a formula (it begins with ``=``,
  ``+``, ``-``, ``@``, a tab or a carriage return, also after leading blanks, or with
  their full-width forms) gets a leading single quote, as OWASP advises for CSV
  injection; plain numbers (``-0.5``, ``+3``, ``1e-4``) stay numbers. Every CSV goes
  through :func:`write_csv` or :func:`frame_csv`.
* :func:`md_escape`: ``|`` would end a Markdown cell and a line break the row. Every
  Markdown table goes through :func:`markdown_table` (or :func:`frame_markdown`).
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

#: first characters a spreadsheet reads as the start of a formula (and their full-width forms)
FORMULA_START = "=+-@\uff1d\uff0b\uff0d\uff20"
#: a cell beginning with one of these is neutralised whatever follows
CONTROL_START = "\t\r\n"
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def csv_cell(value: Any) -> Any:
    """``value`` safe for a spreadsheet: text a spreadsheet would evaluate gets a leading
    ``'``; numbers, plain numeric text and anything else are returned unchanged."""
    if not isinstance(value, str) or not value:
        return value
    if value[0] in CONTROL_START or value.lstrip(" \t\r\n\u00a0")[:1] in FORMULA_START:
        if _PLAIN_NUMBER.fullmatch(value):
            return value
        return "'" + value
    return value


def csv_text(header: Sequence[Any] | None, rows: Iterable[Sequence[Any]]) -> str:
    """A CSV document (header, then rows), every cell through :func:`csv_cell`."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    if header is not None:
        w.writerow([csv_cell(c) for c in header])
    for row in rows:
        w.writerow([csv_cell(c) for c in row])
    return buf.getvalue()


def write_csv(path: Any, header: Sequence[Any] | None, rows: Iterable[Sequence[Any]]) -> Any:
    """:func:`csv_text` written whole (:func:`custom_metrics.outputs.write_atomically`); returns ``path``."""
    from pathlib import Path

    from custom_metrics.outputs import write_atomically

    write_atomically(Path(path), csv_text(header, rows))
    return path


def safe_frame(df: Any) -> Any:
    """A copy of a pandas frame with every text cell, index label and column name
    through :func:`csv_cell` (numbers untouched)."""
    out = df.copy()
    out.columns = _safe_index(out.columns)
    out.index = _safe_index(out.index)
    for col in out.columns[[dt == object for dt in out.dtypes]]:  # noqa: E721  (object columns hold text)
        out[col] = out[col].map(csv_cell)
    return out


def _safe_index(index: Any) -> Any:
    import pandas as pd

    if isinstance(index, pd.MultiIndex):
        return pd.MultiIndex.from_tuples([tuple(csv_cell(v) for v in t) for t in index], names=index.names)
    return pd.Index([csv_cell(v) for v in index], name=csv_cell(index.name), dtype=index.dtype
                    if index.dtype != object else object)


def frame_csv(df: Any, path: Any, index: bool = True) -> Any:
    """A pandas frame as a CSV file, neutralised (:func:`safe_frame`) and written whole."""
    from pathlib import Path

    from custom_metrics.outputs import write_atomically

    write_atomically(Path(path), safe_frame(df).to_csv(index=index))
    return path


def md_escape(text: Any) -> str:
    """A table cell's text made safe for a Markdown table: ``|`` would end the cell and a
    line break the row. Backslashes right before a ``|`` are doubled, so the user's own
    ``\\|`` cannot undo the escape; other backslashes are left as written."""
    out = re.sub(r"(\\*)\|", lambda m: m.group(1) * 2 + "\\|", str(text))
    return " ".join(out.splitlines())


def markdown_table(header: Sequence[Any], rows: Iterable[Sequence[Any]],
                   align: Sequence[str] | None = None) -> str:
    """A Markdown table; every cell escaped (model, adapter, system and task names are the user's)."""
    align = align or ["---"] + ["---:"] * (len(header) - 1)
    lines = ["| " + " | ".join(md_escape(h) for h in header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(md_escape(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def frame_markdown(df: Any, digits: int = 4) -> str:
    """A pandas frame (index as the first column) as an escaped Markdown table; numbers
    rounded to ``digits``, missing ones ``n/a``."""
    def cell(v: Any) -> str:
        if isinstance(v, float):
            return "n/a" if not math.isfinite(v) else f"{round(v, digits):g}"
        return str(v)

    header = [df.index.name or "", *map(str, df.columns)]
    return markdown_table(header, [[cell(i), *map(cell, row)] for i, row in zip(df.index, df.itertuples(index=False))])


__all__ = ["CONTROL_START", "FORMULA_START", "csv_cell", "csv_text", "frame_csv", "frame_markdown", "markdown_table",
           "md_escape", "safe_frame", "write_csv"]
