"""Table text for the report's outputs: cells, Markdown, LaTeX and the three files of a table.

Why here: every table the suite writes (the report, ``cross-domain``, ``correlate``)
escapes the user's names (models, adapters, tasks) the same way, so no format can be
broken by a ``|`` or an ``_`` in a name.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def fmt(value: float, digits: int = 2) -> str:
    """A number with ``digits`` decimals; None, NaN and infinities are ``n/a``."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def counted(n: int, noun: str, plural: str = "") -> str:
    """``n`` with ``noun`` in agreement: ``1 system``, ``2 systems``, ``0 systems``
    (``plural`` where adding an s is wrong)."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def md_escape(text: Any) -> str:
    """A table cell's text made safe for a Markdown table: ``|`` would end the cell and a
    line break the row. Backslashes right before a ``|`` are doubled, so the user's own
    ``\\|`` cannot undo the escape; other backslashes are left as written."""
    out = re.sub(r"(\\*)\|", lambda m: m.group(1) * 2 + "\\|", str(text))
    return " ".join(out.splitlines())


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]],
                   align: Sequence[str] | None = None) -> str:
    """A Markdown table; every cell escaped (model, adapter and task names are the user's)."""
    align = align or ["---"] + ["---:"] * (len(header) - 1)
    lines = ["| " + " | ".join(md_escape(h) for h in header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(md_escape(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


_TEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "_": r"\_", "#": r"\#", "$": r"\$",
                 "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                 "±": r"$\pm$", "Δ": r"$\Delta$", "\n": " "}
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
    import csv

    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"{stem}.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    md = (f"{caption}\n\n" if caption else "") + markdown_table(header, rows)
    (out / f"{stem}.md").write_text(md, encoding="utf-8")
    (out / f"{stem}.tex").write_text(latex_table(header, rows, caption), encoding="utf-8")
    return out / f"{stem}.csv", out / f"{stem}.md", out / f"{stem}.tex", md


__all__ = ["counted", "fmt", "latex_table", "markdown_table", "md_escape", "write_table"]
