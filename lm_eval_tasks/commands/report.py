"""``domsum report``: paper-style tables and plots from harness result folders.

* ``domainsum_shots``: DomainSum Table 2, zero-shot vs two-shot per model and domain,
  ROUGE (``rouge_geo``) and BERTScore F1 with deltas (two-shot − zero-shot).
* ``domainsum_finetuned``: DomainSum Table 3, fine-tuned runs (``peft=`` in
  ``model_args`` or a folder given as ``DIR=fine-tuned`` / ``--fine-tuned DIR``), with
  the delta to the zero-shot run of the same model name where present.
* ``adapteval``: AdaptEval Table 3 layout, per model and setting, BERTScore F1, DVO and
  ROUGE per domain.

Scores x100 (DVO is already a percentage). Each table is written as ``.md``, ``.csv``
and ``.tex``. Where logged samples exist, ROUGE gets a bootstrap 95% confidence
interval (percentile; ``--bootstrap N`` resamples, ``--seed``), recomputed from the
samples' prediction/reference with ``custom_metrics.rouge.rouge_per_document``
(BERTScore intervals are not computed). ``bar_<benchmark>.png`` plots the main metric
per domain and setting (error bars = the intervals). Missing metrics, absent tasks and
NaN values show as n/a and are listed under "Notes".

    domsum report out/runs out/ft=fine-tuned --out out/report --bootstrap 1000
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from custom_metrics.analysis.bootstrap import bootstrap_rouge
from lm_eval_tasks import catalog
from lm_eval_tasks.commands.results import Results, fmt, load_results, scale, write_table


# ------------------------------------------------------------------ bootstrap


def confidence_intervals(res: Results, n_boot: int, seed: int) -> pd.DataFrame:
    """(model, setting, task, metric, point, low, high) for every run with samples."""
    from custom_metrics.rouge import rouge_per_document, stemming_for

    rows = []
    for (model, setting, task) in res.origin:
        samples = res.samples(model, setting, task)
        if not samples:
            continue
        try:
            benchmark = catalog.lookup(task).benchmark
        except catalog.UnknownTask:
            benchmark = None
        stem, _ = stemming_for(benchmark)  # the benchmark's release convention, as the run used
        per = rouge_per_document([s.prediction for s in samples],
                                 [s.reference for s in samples], use_stemmer=stem)
        for metric, (p, lo, hi) in bootstrap_rouge(per, n_boot, seed).items():
            rows.append({"model": model, "setting": setting, "task": task, "metric": metric,
                         "point": p, "low": lo, "high": hi, "n": len(per)})
    return pd.DataFrame(rows, columns=["model", "setting", "task", "metric", "point", "low",
                                       "high", "n"])


# ------------------------------------------------------------------ tables


class Lookup:
    def __init__(self, res: Results, ci: pd.DataFrame):
        f = res.frame
        self.values = {(r.model, r.setting, r.task, r.metric): r.value
                       for r in f.itertuples()}
        self.ci = {(r.model, r.setting, r.task, r.metric): (r.low, r.high, r.point)
                   for r in ci.itertuples()}
        self.notes: set[str] = set()

    def get(self, model, setting, task, metric) -> float:
        v = self.values.get((model, setting, task, metric))
        if v is None:
            self.notes.add(f"{model} / {setting}: {metric} missing for {task}")
            return math.nan
        return v * scale(metric) if math.isfinite(v) else math.nan

    def interval(self, model, setting, task, metric) -> str:
        c = self.ci.get((model, setting, task, metric))
        if c is None:
            return ""
        k = scale(metric)
        v = self.values.get((model, setting, task, metric))
        if v is not None and math.isfinite(v) and abs(v - c[2]) * k > 0.5:
            self.notes.add(f"{model} / {setting} / {task}: {metric} recomputed from the "
                           f"samples is {c[2] * k:.2f}, the results file says {v * k:.2f}; "
                           "the interval is around the recomputed value")
        return f"[{c[0] * k:.2f}, {c[1] * k:.2f}]"


def _delta(a: float, b: float) -> str:
    if not (math.isfinite(a) and math.isfinite(b)):
        return "n/a"
    return f"{b - a:+.2f}"


def _with_ci(v: float, ci: str) -> str:
    return fmt(v) + (f" {ci}" if ci and math.isfinite(v) else "")


def _domains(frame: pd.DataFrame, benchmark: str) -> list[str]:
    present = set(frame[frame["benchmark"] == benchmark]["domain"])
    order = list(catalog.subsets(benchmark))
    return [d for d in order if d in present] + sorted(present - set(order))


def _task(benchmark: str, domain: str, shots: int = 0) -> str:
    """The plain task of ``benchmark``/``domain`` with ``shots`` demonstrations (catalogue name)."""
    found = catalog.select(benchmark, shots=shots, variant="", subsets=(domain,))
    return found[0].name if found else f"{benchmark}/{domain}/{shots}shot (not in the catalogue)"


def _level(domain: str) -> str:
    return catalog.level_of("domainsum", domain) or ""


def shots_table(res: Results, lk: Lookup, main: str):
    f = res.frame[res.frame["benchmark"] == "domainsum"]
    header = ["Model", "Level", "Domain", "ROUGE 0-shot", "ROUGE 2-shot", "Δ ROUGE",
              "BERTScore 0-shot", "BERTScore 2-shot", "Δ BERTScore"]
    rows = []
    models = sorted(set(f[f["setting"].isin(["zero-shot", "2shot"])]["model"]))
    for model in models:
        for d in _domains(f, "domainsum"):
            z_task, t_task = _task("domainsum", d), _task("domainsum", d, 2)
            if (model, "zero-shot", z_task) not in res.origin and \
                    (model, "2shot", t_task) not in res.origin:
                continue
            cells = [model, _level(d), d]
            for metric in (main, "bertscore_f1"):
                z = lk.get(model, "zero-shot", z_task, metric)
                t = lk.get(model, "2shot", t_task, metric)
                cells += [_with_ci(z, lk.interval(model, "zero-shot", z_task, metric)),
                          _with_ci(t, lk.interval(model, "2shot", t_task, metric)),
                          _delta(z, t)]
            rows.append(cells)
    return header, rows


def finetune_table(res: Results, lk: Lookup, main: str):
    f = res.frame[(res.frame["benchmark"] == "domainsum") & (res.frame["setting"] == "fine-tuned")]
    header = ["Model", "Level", "Domain", "ROUGE", "BERTScore", "Δ ROUGE vs 0-shot",
              "Δ BERTScore vs 0-shot"]
    rows = []
    for model in sorted(set(f["model"])):
        for task in sorted(set(f[f["model"] == model]["task"])):
            d = f[f["task"] == task]["domain"].iloc[0]
            zt = _task("domainsum", d)
            r = lk.get(model, "fine-tuned", task, main)
            b = lk.get(model, "fine-tuned", task, "bertscore_f1")
            has_zero = (model, "zero-shot", zt) in res.origin
            rz = lk.get(model, "zero-shot", zt, main) if has_zero else math.nan
            bz = lk.get(model, "zero-shot", zt, "bertscore_f1") if has_zero else math.nan
            rows.append([model, _level(d), task.removeprefix("domainsum_"),
                         _with_ci(r, lk.interval(model, "fine-tuned", task, main)), fmt(b),
                         _delta(rz, r), _delta(bz, b)])
    return header, rows


def adapteval_table(res: Results, lk: Lookup, main: str):
    f = res.frame[res.frame["benchmark"] == "adapteval"]
    domains = _domains(f, "adapteval")
    header = ["Model", "Setting"] + [f"{d} {m}" for d in domains
                                     for m in ("BERTScore", "DVO", "ROUGE")]
    rows = []
    adapteval_tasks = set(f["task"])
    keys = sorted({(k[0], k[1]) for k in res.origin if k[2] in adapteval_tasks})
    for model, setting in keys:
        cells = [model, setting]
        for d in domains:
            task = _task("adapteval", d, 2 if setting == "2shot" else 0)
            if (model, setting, task) not in res.origin:
                lk.notes.add(f"{model} / {setting}: task {task} absent")
                cells += ["n/a"] * 3
                continue
            cells += [fmt(lk.get(model, setting, task, "bertscore_f1")),
                      fmt(lk.get(model, setting, task, "dvo")),
                      _with_ci(lk.get(model, setting, task, main),
                               lk.interval(model, setting, task, main))]
        rows.append(cells)
    return header, rows



# ------------------------------------------------------------------ plot


def bar_plot(path: Path, res: Results, ci: pd.DataFrame, benchmark: str, metric: str) -> Path | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    f = res.frame[(res.frame["benchmark"] == benchmark) & (res.frame["metric"] == metric)]
    f = f[np.isfinite(f["value"])]
    if f.empty:
        return None
    domains = _domains(f, benchmark)
    series = sorted({(r.model, r.setting) for r in f.itertuples()})
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(domains) + 3), 4.6))
    cmap = plt.get_cmap("tab10")
    k = scale(metric)
    for i, (model, setting) in enumerate(series):
        vals, errs = [], [[], []]
        for d in domains:
            g = f[(f["model"] == model) & (f["setting"] == setting) & (f["domain"] == d)]
            v = float(g["value"].mean()) * k if len(g) else math.nan
            vals.append(v)
            c = ci[(ci["model"] == model) & (ci["setting"] == setting)
                   & (ci["metric"] == metric) & ci["task"].isin(g["task"])] if len(ci) else ci
            if len(c) and math.isfinite(v):
                errs[0].append(max(0.0, v - c["low"].iloc[0] * k))
                errs[1].append(max(0.0, c["high"].iloc[0] * k - v))
            else:
                errs[0].append(0.0)
                errs[1].append(0.0)
        x = np.arange(len(domains)) + (i - (len(series) - 1) / 2) * width
        has_err = any(e > 0 for e in errs[0] + errs[1])
        ax.bar(x, np.nan_to_num(vals), width, yerr=errs if has_err else None, capsize=3,
               color=cmap(i % 10),
               label=f"{model} ({setting})")
    ax.set_xticks(np.arange(len(domains)))
    ax.set_xticklabels(domains, rotation=20, ha="right")
    ax.set_ylabel(f"{metric} (x{k:g})" if k != 1 else metric)
    ax.set_title(f"{benchmark}: {metric} per domain and setting"
                 + ("\nerror bars: bootstrap 95% CI" if len(ci) else ""))
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=150, bbox_inches="tight")
    plt.close(fig)
    return path


# ------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="domsum report", description=__doc__.split("\n")[0])
    ap.add_argument("folders", nargs="+", help="harness output folders (DIR or DIR=fine-tuned)")
    ap.add_argument("--fine-tuned", nargs="*", default=[], help="folders of fine-tuned runs")
    ap.add_argument("--out", type=Path, default=Path("out/report"))
    ap.add_argument("--metric", default="rouge_geo", help="main ROUGE metric")
    ap.add_argument("--bootstrap", type=int, default=1000, help="resamples (0 = no CIs)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bertscore-model", help="accepted; BERTScore intervals are not "
                    "computed by this version")
    ap.add_argument("--no-plots", action="store_true")
    args = ap.parse_args(argv)

    res = load_results(args.folders, fine_tuned=args.fine_tuned)
    ci = (confidence_intervals(res, args.bootstrap, args.seed) if args.bootstrap > 0
          else pd.DataFrame(columns=["model", "setting", "task", "metric", "point", "low",
                                     "high", "n"]))
    lk = Lookup(res, ci)
    args.out.mkdir(parents=True, exist_ok=True)
    out_md = []
    written = []
    ci_note = (f" ROUGE brackets: bootstrap 95% CI ({args.bootstrap} resamples, seed "
               f"{args.seed}) where samples were logged." if len(ci) else "")
    f = res.frame
    if ((f["benchmark"] == "domainsum") & f["setting"].isin(["zero-shot", "2shot"])).any():
        h, r = shots_table(res, lk, args.metric)
        *paths, md = write_table(args.out, "domainsum_shots", h, r,
                                 "DomainSum: zero-shot vs two-shot (x100; Δ = two-shot − "
                                 "zero-shot)." + ci_note)
        written += paths
        out_md.append(md)
    if ((f["benchmark"] == "domainsum") & (f["setting"] == "fine-tuned")).any():
        h, r = finetune_table(res, lk, args.metric)
        *paths, md = write_table(args.out, "domainsum_finetuned", h, r,
                                 "DomainSum: fine-tuned (x100)." + ci_note)
        written += paths
        out_md.append(md)
    if (f["benchmark"] == "adapteval").any():
        h, r = adapteval_table(res, lk, args.metric)
        *paths, md = write_table(args.out, "adapteval", h, r,
                                 "AdaptEval: BERTScore F1 (x100), DVO (%), ROUGE (x100)."
                                 + ci_note)
        written += paths
        out_md.append(md)
    if len(ci):
        ci.to_csv(args.out / "bootstrap_ci.csv", index=False)
        written.append(args.out / "bootstrap_ci.csv")
    if not args.no_plots:
        for bench in sorted(set(f["benchmark"])):
            p = bar_plot(args.out / f"bar_{bench}.png", res, ci, bench, args.metric)
            if p:
                written.append(p)
    notes = sorted(lk.notes) + res.problems
    if args.bertscore_model:
        notes.append("BERTScore bootstrap intervals are not computed (ROUGE only)")
    if not out_md:
        notes.append("no domainsum/adapteval results found")
    text = "\n".join(out_md)
    if notes:
        text += "\nNotes:\n" + "\n".join(f"- {n}" for n in notes) + "\n"
    (args.out / "report.md").write_text(text, encoding="utf-8")
    print(text)
    print("wrote " + ", ".join(str(p) for p in written), file=sys.stderr)
    return 0

