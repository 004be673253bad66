"""Cross-domain evaluation matrices (DomainSum Figure 5 and Table 6).

Layout: ``<root>/<source_domain>/<model>/results_*.json``: a model fine-tuned on
``source_domain`` and evaluated (zero-shot tasks, no ``_2shot``) on every domain of
its level. For each level and model it builds the source x target matrix of ROUGE
(``rouge_geo``) and BERTScore F1 (x100), and the difference to in-domain fine-tuning:
``diff[s, t] = M[s, t] - M[t, t]`` (negative = worse than training on the target
itself). Missing cells are n/a and listed.

Writes into ``--out``: ``cross_<metric>_<level>_<model>.csv`` / ``.md`` (matrix and
difference), ``cross_domain.md`` (everything), and a heat map
``cross_<metric>_<level>_<model>.png`` per level and metric.

    domsum cross-domain out/cross --out out/cross_report
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from lm_eval_tasks.catalog import DOMAINSUM_LEVELS as LEVELS
from lm_eval_tasks.commands.results import fmt, load_results, markdown_table, scale

METRICS = {"rouge_geo": "ROUGE", "bertscore_f1": "BERTScore F1"}


def load_cross(root: str | Path) -> tuple[pd.DataFrame, list[str]]:
    """Tidy frame with an extra ``source`` column (the fine-tuning domain)."""
    root = Path(root)
    frames, problems = [], []
    sources = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    if not sources:
        problems.append(f"{root}: no <source_domain>/ folders")
    for src in sources:
        res = load_results([(src, "fine-tuned")])
        problems += res.problems
        f = res.frame[res.frame["shots"] == 0].copy()
        f["source"] = src.name
        frames.append(f)
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return frame, problems


def matrices(frame: pd.DataFrame, metric: str) -> dict[tuple[str, str], dict]:
    """(level, model) -> {"domains", "matrix", "diff"} (values x100 for fractions)."""
    out = {}
    if frame.empty:
        return out
    f = frame[frame["metric"] == metric]
    for model, g in f.groupby("model"):
        for level, domains in LEVELS.items():
            present = set(g["domain"]) | set(g["source"])
            names = [d for d in domains if d in present]
            if not names:
                continue
            # other benchmarks' levels are not DomainSum's; skip them silently
            n = len(names)
            m = np.full((n, n), math.nan)
            for i, s in enumerate(names):
                for j, t in enumerate(names):
                    v = g[(g["source"] == s) & (g["domain"] == t)]["value"]
                    if len(v):
                        m[i, j] = float(v.mean()) * scale(metric)
            diag = np.diag(m)
            diff = m - diag[None, :]
            out[(level, model)] = {"domains": names, "matrix": m, "diff": diff}
    return out


def matrix_markdown(names, m, digits=2) -> str:
    rows = [[f"{s} (source)", *(fmt(v, digits) for v in row)] for s, row in zip(names, m)]
    return markdown_table(["source \\ target", *names], rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="domsum cross-domain", description=__doc__.split("\n")[0])
    ap.add_argument("root", type=Path, help="<root>/<source_domain>/<model>/results_*.json")
    ap.add_argument("--out", type=Path, default=Path("out/cross_domain"))
    ap.add_argument("--metrics", default="rouge_geo,bertscore_f1")
    ap.add_argument("--no-plots", action="store_true")
    args = ap.parse_args(argv)

    from custom_metrics.analysis import plots as _plots

    frame, problems = load_cross(args.root)
    args.out.mkdir(parents=True, exist_ok=True)
    md = ["Cross-domain evaluation: rows = source (fine-tuned on), columns = target "
          "(evaluated on); scores x100; Δ = cell − in-domain score of the target "
          "(diagonal).", ""]
    written = []
    for metric in [m.strip() for m in args.metrics.split(",") if m.strip()]:
        label = METRICS.get(metric, metric)
        mats = matrices(frame, metric)
        if not mats:
            problems.append(f"no '{metric}' values found")
        for (level, model), r in mats.items():
            names, m, diff = r["domains"], r["matrix"], r["diff"]
            missing = [f"{s}->{t}" for i, s in enumerate(names) for j, t in enumerate(names)
                       if not np.isfinite(m[i, j])]
            if missing:
                problems.append(f"{model}/{level}/{metric}: missing cells " + ", ".join(missing))
            stem = f"cross_{metric}_{level}_{model}"
            rows = [[s, "matrix", *(f"{v:.4f}" if np.isfinite(v) else "" for v in row)]
                    for s, row in zip(names, m)]
            rows += [[s, "diff", *(f"{v:.4f}" if np.isfinite(v) else "" for v in row)]
                     for s, row in zip(names, diff)]
            pd.DataFrame(rows, columns=["source", "kind", *names]).to_csv(
                args.out / f"{stem}.csv", index=False)
            part = (f"**{label}, {level}, {model}**\n\n" + matrix_markdown(names, m)
                    + f"\nΔ to in-domain ({label}):\n\n" + matrix_markdown(names, diff))
            (args.out / f"{stem}.md").write_text(part, encoding="utf-8")
            md.append(part)
            written += [args.out / f"{stem}.csv", args.out / f"{stem}.md"]
            if not args.no_plots:
                finite = m[np.isfinite(m)]
                written.append(_plots.heatmap(
                    args.out / f"{stem}.png",
                    f"{level.capitalize()}, {model}: cross-domain {label} (x100)\n"
                    "rows: fine-tuned on (source), columns: evaluated on (target)",
                    names, m, value_label=f"{label} (x100)",
                    row_labels=[f"{s} (src)" for s in names],
                    vmin=float(finite.min()) if finite.size else None,
                    vmax=float(finite.max()) if finite.size else None))
    if problems:
        md += ["Notes:", *(f"- {p}" for p in problems), ""]
    text = "\n".join(md)
    (args.out / "cross_domain.md").write_text(text, encoding="utf-8")
    print(text)
    print("wrote " + ", ".join(str(p) for p in written), file=sys.stderr)
    return 0
