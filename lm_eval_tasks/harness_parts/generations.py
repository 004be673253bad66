"""The generations of a task before scoring: saved before judging, counted and checked.

Why a module of its own: lm-eval writes samples only after every metric is computed,
so a judge interrupted (Ctrl-C, a killed job) would cost every generation; and empty
generations or generations cut by ``max_gen_toks`` score low for reasons that are not
the model's summarizing ability. Both are plain file and counting work, no ``lm_eval``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any

from lm_eval_tasks.benchmarks.budget import Meter
from lm_eval_tasks.harness_parts.ranks import all_ranks, process_group
from lm_eval_tasks.results import samples_name

log = logging.getLogger(__name__)

#: generations files this process saved before judging (named again if the run is interrupted)
SAVED_GENERATIONS: list[str] = []


def save_generations(folder: str, task: str, rows: Iterable[dict]) -> str | None:
    """Write this rank's generations (``rows``, the harness's samples layout) into ``folder``
    before judging starts; the path written, or None when it could not be written.

    The file has the harness's samples layout, so ``domsum rescore FILE`` finishes the
    scoring and the judging, paying only for what the judge cache does not hold yet.
    """
    from datetime import datetime
    from pathlib import Path

    group = process_group()
    stamp = datetime.now().strftime("%Y-%m-%dT%H-%M-%S.%f")
    path = Path(folder).expanduser() / samples_name(task, stamp, group.get_rank() if group is not None else None)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "x", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
    except OSError as exc:
        log.warning("task %s: could not save the generations before judging (%s); they are written with "
                    "the samples at the end of the run", task, exc)
        return None
    SAVED_GENERATIONS.append(str(path))
    log.warning("task %s: generations saved to %s before judging; if judging is interrupted, finish it "
                "with `domsum rescore %s` (answers in the judge cache are not paid again)",
                task, path, path)
    return str(path)


def generation_report(task: str, raw: list[tuple[str, str]], meter: Meter | None, limit: int) -> dict[str, Any]:
    """Count empty generations and generations cut by ``max_gen_toks`` (``limit``); warn about both.

    ``raw`` is (document id, raw generation) of this rank's instances; the counts are
    every rank's. The cut count tokenizes each *raw* generation (before stripping: a
    reply that opens with a blank line spends tokens on it) with the tokenizer the
    prompts were measured with (``meter``); a generation of at least ``max_gen_toks``
    tokens ran to the limit. Without a tokenizer (an API model measured by a bound) it
    is recorded as unknown.
    """
    lengths = [meter.text_tokens(text) if meter is not None and text else 0 for _, text in raw]
    # every rank's generations (a data-parallel run), in rank order: rank 0 writes the record
    parts = all_ranks(([(i, bool(text.strip())) for i, text in raw], lengths))
    raw = [(i, "x" if said else "") for part, _ in parts for i, said in part]
    lengths = [n for _, part in parts for n in part]
    empty = sorted({i for i, text in raw if not text.strip()})
    report: dict[str, Any] = {"generations": len(raw), "empty": len(empty), "empty_ids": empty[:50]}
    report["max_gen_toks"] = limit
    if any(n is None for n in lengths):
        report["hit_max_gen_toks"] = "unknown (no tokenizer for the evaluated model)"
    else:
        hits = sorted({i for (i, _), n in zip(raw, lengths) if n >= limit})
        report.update(hit_max_gen_toks=len(hits), hit_max_gen_toks_ids=hits[:50])
    if empty:
        log.warning("task %s: %d of %d generations are empty (scored as empty summaries): %s",
                    task, len(empty), len(raw), ", ".join(empty[:5]))
    if isinstance(report["hit_max_gen_toks"], int) and report["hit_max_gen_toks"]:
        log.warning("task %s: %d of %d generations reached max_gen_toks=%s and may be cut short",
                    task, report["hit_max_gen_toks"], len(raw), limit)
    return report


__all__ = ["SAVED_GENERATIONS", "generation_report", "save_generations"]
