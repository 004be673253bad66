"""Table text for the report's outputs: cells, Markdown, LaTeX and the three files of a table.

Why here: every table the suite writes (the report, ``cross-domain``, ``correlate``)
escapes the user's names (models, adapters, tasks) the same way, so no format can be
broken by a ``|`` or an ``_`` in a name, and no CSV cell runs as a spreadsheet formula.
Markdown and CSV cells are escaped by :mod:`custom_metrics.cells` (meta-eval's tables
use it too); LaTeX is the report's alone.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from custom_metrics.cells import markdown_table, md_escape, md_text, write_csv
from custom_metrics.outputs import write_atomically


def fmt(value: float, digits: int = 2) -> str:
    """A number with ``digits`` decimals; None, NaN and infinities are ``n/a``."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def counted(n: int, noun: str, plural: str = "") -> str:
    """``n`` with ``noun`` in agreement: ``1 system``, ``2 systems``, ``0 systems``
    (``plural`` where adding an s is wrong)."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


_TEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "_": r"\_", "#": r"\#", "$": r"\$",
                 "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                 "±": r"$\pm$", "Δ": r"$\Delta$", "✓": r"$\surd$", "✗": r"$\times$", "\n": " "}
_TEX_RE = re.compile("|".join(re.escape(k) for k in _TEX_SPECIALS))


def _tex_escape(text: Any) -> str:
    """Text made safe for LaTeX in one pass (so an escape is never escaped again)."""
    return _TEX_RE.sub(lambda m: _TEX_SPECIALS[m.group()], str(text))


def latex_table(header: Sequence[str], rows: Sequence[Sequence[str]], caption: str = "") -> str:
    """A booktabs LaTeX table; every cell and the caption escaped."""
    spec = "l" + "r" * (len(header) - 1)
    lines = [r"\begin{table}[t]", r"\centering", rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
             " & ".join(_tex_escape(h) for h in header) + r" \\", r"\midrule"]
    lines += [" & ".join(_tex_escape(c) for c in r) + r" \\" for r in rows]
    lines += [r"\bottomrule", r"\end{tabular}"]
    if caption:
        lines.append(rf"\caption{{{_tex_escape(caption)}}}")
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


def write_table(out: Path, stem: str, header: Sequence[str], rows: Sequence[Sequence[str]],
                caption: str = "") -> tuple[Path, Path, Path, str]:
    """Writes ``stem.csv``, ``stem.md`` and ``stem.tex``; returns them and the Markdown."""
    write_csv(out / f"{stem}.csv", header, rows)
    md = (f"{md_text(caption)}\n\n" if caption else "") + markdown_table(header, rows)
    write_atomically(out / f"{stem}.md", md)
    write_atomically(out / f"{stem}.tex", latex_table(header, rows, caption))
    return out / f"{stem}.csv", out / f"{stem}.md", out / f"{stem}.tex", md


__all__ = ["counted", "fmt", "latex_table", "markdown_table", "md_escape", "write_table"]
