"""What ``domsum token-shift`` shows of a result: the console summary, and AdaptEval Table 4
beside the run.

Why apart from the runner (:mod:`lm_eval_tasks.analysis.token_shift`): the runner computes
the statistics; what a reader sees next to them — the paper's published KL and token
shift rate of the same domain, cited, and whether the run followed the paper's protocol —
is the check every command shares (:mod:`lm_eval_tasks.published.beside`), fed with what a
token-shift run did.

:func:`published_beside`: for a run of an AdaptEval domain (the task named by ``--task``
or the samples file name), Table 4's values of that domain in the block of the run's kind
of comparison (``--mode prompt``: ``base 2-shot``; a model against itself with an adapter:
``base FT``; two different models: ``base FT`` and ``2-shot 2-shot``, as a fully fine-tuned
copy and a bigger model cannot be told apart), beside the run's ``kl`` and ``shift_rate``
(the domain-vocabulary positions, the paper's), each with the check: the comparison and
the models of the paper's row, the documents averaged against the paper's 10, the tokens
(a 10,000-word domain vocabulary, the paper's, or another), KL's unit (nats per position
here; the paper states none: :data:`~custom_metrics.analysis.token_shift.TABLE4_UNITS`)
and the decoding of the summaries (the paper's greedy).
"""

from __future__ import annotations

import math
from typing import Any

from custom_metrics.analysis.token_shift import ALL_POSITIONS, TABLE4_UNITS, UNITS
from lm_eval_tasks.benchmarks.adapteval.record import RECORD as ADAPTEVAL

#: the paper and table a token-shift run is shown beside
PUBLISHED_TABLE = (ADAPTEVAL.name, "Table 4")
#: the run's statistic beside each of Table 4's metrics (the domain-vocabulary positions)
STATISTIC = {"KL": "kl", "TSR": "shift_rate"}
#: the size of the paper's domain vocabulary ("the top 10k most frequent words")
PAPER_VOCABULARY = 10_000


def comparison_kind(config: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    """(the run's kind of comparison in words, the Table 4 blocks it may stand beside)."""
    if config["mode"] == "prompt":
        return "base 2-shot", ("base 2-shot",)
    base, adapted = config.get("base") or {}, config.get("adapted") or {}
    if adapted.get("path") == base.get("path") and adapted.get("peft") and not base.get("peft"):
        return "base FT", ("base FT",)
    return "two models", ("base FT", "2-shot 2-shot")


def _row_models(row: str) -> tuple[str, str]:
    """(adapted, base) model names of a Table 4 row: ``Llama2 13b vs. 7b`` -> (Llama2 13b, Llama2 7b)."""
    left, _, right = row.partition(" vs. ")
    return left, f"{left.rsplit(' ', 1)[0]} {right}"


def published_beside(result: dict[str, Any], task: str | None, decoding: str | None) -> list[dict[str, Any]]:
    """AdaptEval Table 4's values of the run's domain beside its ``kl`` and ``shift_rate``
    (module docstring); empty when the run's task is not an AdaptEval domain. ``decoding``:
    ``greedy`` or ``sampled``, as the samples' generation arguments say (None: not said)."""
    from lm_eval_tasks import catalog
    from lm_eval_tasks import published
    from lm_eval_tasks.published import beside, protocol

    name, table = PUBLISHED_TABLE
    paper = published.load(name)
    try:
        spec = catalog.lookup(task) if task else None
    except catalog.UnknownTask:
        spec = None
    if paper is None or spec is None or spec.benchmark != name:
        return []
    config, overall = result["config"], result["overall"]
    kind, blocks = comparison_kind(config)
    base = (config.get("base") or {}).get("path")
    adapted = (config.get("adapted") or {}).get("path") or base
    size = config.get("vocabulary_size")
    tokens = (f"the {size:,} words of {config.get('vocab')}" if size else "every summary position (no vocabulary)")
    facts = protocol.RunFacts(label=f"{config['adapted_label']} vs {config['base_label']}", setting=kind,
                              subset=spec.subset, documents=overall["documents"],
                              stated={"unit": UNITS["kl"].split(":")[0]},
                              generation={"decoding": decoding} if decoding else {})
    out = []
    for v in paper.find(table=table, subset=spec.subset):
        if v.get("block") not in blocks or v["metric"] not in STATISTIC:
            continue
        row_adapted, row_base = _row_models(v["row"])
        theirs = paper.protocol(table, v.get("block")) or {}
        extra = [protocol.Field("comparison", kind, v["block"], kind == v["block"]),
                 protocol.Field("models", f"{adapted} vs {base}", v["row"],
                                paper.model_of(adapted) in (row_adapted, f"{row_adapted} (base)")
                                and paper.model_of(base) in (row_base, f"{row_base} (base)")),
                 protocol.Field(f"{v['metric']} tokens", tokens, theirs["metrics"][v["metric"]]["tokens"],
                                size == PAPER_VOCABULARY)]
        value = overall.get(STATISTIC[v["metric"]])
        value = value if isinstance(value, (int, float)) and math.isfinite(value) else None
        out.append(beside.beside(paper, v, value, facts, f"{spec.subset} {v['metric']}", extra))
    return out


def decoding_of(sample: dict[str, Any]) -> str | None:
    """``greedy`` or ``sampled``: how a samples file's line says its summary was generated
    (its generation arguments' ``do_sample`` and ``temperature``); None where it says neither."""
    from lm_eval_tasks.published.protocol import sampled

    args = (((sample.get("arguments") or {}).get("gen_args_0") or {}).get("arg_1")) if sample else None
    if not isinstance(args, dict) or ("do_sample" not in args and "temperature" not in args):
        return None
    return "sampled" if sampled({f"gen_kwargs.{k}": str(args[k]) for k in ("do_sample", "temperature")
                                 if k in args}) else "greedy"


def _fmt(x: Any) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.4g}"


def format_summary(result: dict[str, Any]) -> str:
    """The console summary: settings, counts, the statistics at domain words (the paper's)
    and at all positions, and AdaptEval Table 4 beside them where the run is of its domains."""
    o, c = result["overall"], result["config"]
    lines = [f"{c['base_label']}  ->  {c['adapted_label']}",
             f"{o['documents']} of {c['documents_available']} documents (seed {c['seed']}), "
             f"{o['positions' + ALL_POSITIONS]} {c['positions']} summary positions "
             f"({o['positions']} at domain words), {o['forward_passes']} forward passes, "
             f"{o['seconds']:.1f} s",
             f"{'':14}{'KL':>10}{'shift %':>10}{'marginal %':>12}{'unshifted %':>13}"]
    for label, sfx in (("domain words", ""), ("all positions", ALL_POSITIONS)):
        lines.append(f"{label:14}{_fmt(o['kl' + sfx]):>10}{_fmt(o['shift_rate' + sfx]):>10}"
                     f"{_fmt(o['marginal_rate' + sfx]):>12}{_fmt(o['unshifted_rate' + sfx]):>13}")
    lines.append("KL in nats per position (mean over positions, then documents); AdaptEval Table 4 states no "
                 "unit for its KL (the result's published_comparison)")
    if result.get("published"):
        from lm_eval_tasks.published.beside import beside_markdown

        lines += ["", "Beside AdaptEval Table 4 (published; 'published' in the JSON). " + TABLE4_UNITS, "",
                  beside_markdown(result["published"]).rstrip()]
    return "\n".join(lines)


__all__ = ["PAPER_VOCABULARY", "PUBLISHED_TABLE", "STATISTIC", "comparison_kind", "decoding_of", "format_summary",
           "published_beside"]
