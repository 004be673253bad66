"""The harness task class shared by every summarization task of the suite.

Why a class (``class: !function ...`` in the YAML) rather than plain
``process_results`` / ``aggregation`` functions: the harness passes ``--metadata``
to the task config but not to metric functions, and our metrics need it (BERTScore
encoder and layer, judge endpoint, vocabulary location). The class also makes the
aggregation step compute each metric *family* once per task, batched: one ROUGE pass
for ``rouge1/rouge2/rougeL/rouge_geo/rouge_mean`` and one BERTScore pass, with the
encoder loaded once per process, for ``bertscore_p/r/f1``.

``process_results`` only packs ``(doc id, prediction, reference)`` per document; the
scores themselves are computed in :meth:`SummarizationTask.aggregation`.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from lm_eval.api.task import ConfigurableTask

from lm_eval_tasks.common.data import LOAD_REPORTS
from lm_eval_tasks.common.settings import int_setting, setting

log = logging.getLogger(__name__)

ROUGE_KEYS = ("rouge1", "rouge2", "rougeL", "rouge_geo", "rouge_mean")
BERTSCORE_KEYS = ("bertscore_p", "bertscore_r", "bertscore_f1")

Item = tuple[str, str, str]  # (doc id, prediction, reference)


def clean_prediction(text: Any) -> str:
    """The generated summary as scored: stripped; a missing generation is ''."""
    if isinstance(text, (list, tuple)):
        text = text[0] if text else ""
    return "" if text is None else str(text).strip()


def _items_key(items: Sequence[Item]) -> str:
    h = hashlib.sha1()
    for it in items:
        h.update(json.dumps(list(it), ensure_ascii=False).encode("utf-8"))
    return h.hexdigest()


class SummarizationTask(ConfigurableTask):
    """Generation task scored by ROUGE and BERTScore (plus families of subclasses)."""

    #: metric families this task reports; subclasses extend it
    FAMILIES: tuple[str, ...] = ("rouge", "bertscore")

    def __init__(self, config: dict | None = None, **kwargs: Any) -> None:
        cfg = dict(config or {})
        cfg.pop("class", None)
        super().__init__(config=cfg)
        self._family_cache: dict[tuple[str, str], dict[str, float]] = {}
        meta = self.config.metadata if isinstance(self.config.metadata, dict) else {}
        self.config.metadata = meta
        meta.update(LOAD_REPORTS.get(self.config.task, {}))  # filled by the loader during download
        self._record_scorer_settings(meta)

    # ------------------------------------------------------------------ settings

    @property
    def meta(self) -> dict:
        return self.config.metadata or {}

    def _record_scorer_settings(self, meta: dict) -> None:
        """Write the resolved scorer settings into the config, hence the results JSON."""
        if "bertscore" in self.FAMILIES:
            from custom_metrics.bertscore import default_model

            meta["bertscore_model_used"] = setting(meta, "bertscore_model") or default_model()
            layers = int_setting(meta, "bertscore_layers")
            meta["bertscore_layers_used"] = layers if layers is not None else "library default"

    # ------------------------------------------------------------------ harness API

    def process_results(self, doc: dict, results: list) -> dict[str, Item]:
        pred = clean_prediction(results[0] if results else "")
        item: Item = (str(doc.get("id", "")), pred, doc.get("summary", ""))
        return {name: item for name in self.metric_names()}

    def metric_names(self) -> list[str]:
        names: list[str] = []
        for fam in self.FAMILIES:
            names.extend(self.family_keys(fam))
        return names

    def family_keys(self, family: str) -> tuple[str, ...]:
        if family == "rouge":
            return ROUGE_KEYS
        if family == "bertscore":
            return BERTSCORE_KEYS
        raise KeyError(family)

    def aggregation(self) -> dict[str, Callable[[list], float]]:
        out = {}
        for fam in self.FAMILIES:
            for key in self.family_keys(fam):
                out[key] = self._aggregator(fam, key)
        return out

    def higher_is_better(self) -> dict[str, bool]:
        return {k: True for k in self.metric_names()}

    # ------------------------------------------------------------------ scoring

    def _aggregator(self, family: str, key: str) -> Callable[[list], float]:
        def agg(items: list) -> float:
            items = [tuple(x) for x in items]
            cache_key = (family, _items_key(items))
            if cache_key not in self._family_cache:
                self._family_cache[cache_key] = self.score_family(family, items)
            return self._family_cache[cache_key][key]

        agg.__name__ = f"{family}_{key}"
        return agg

    def score_family(self, family: str, items: Sequence[Item]) -> dict[str, float]:
        """One batched call into ``custom_metrics`` for a whole metric family."""
        preds = [it[1] for it in items]
        refs = [it[2] for it in items]
        if family == "rouge":
            from custom_metrics.rouge import rouge_scores

            return rouge_scores(preds, refs)
        if family == "bertscore":
            from custom_metrics.bertscore import bertscore

            return bertscore(
                preds,
                refs,
                model=setting(self.meta, "bertscore_model"),
                num_layers=int_setting(self.meta, "bertscore_layers"),
                batch_size=int_setting(self.meta, "bertscore_batch_size", 64) or 64,
            )
        raise KeyError(f"task {self.config.task!r}: unknown metric family {family!r}")
