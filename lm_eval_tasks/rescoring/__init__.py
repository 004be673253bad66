"""Re-scoring generated summaries with suite metrics, no regeneration (``domsum rescore``).

The harness cannot do this: its metrics run only inside an evaluation. Two kinds of
input are read, told apart by extension and content (:func:`~lm_eval_tasks.rescoring.inputs.detect_format`):

* a harness ``--log_samples`` file. lm-eval 0.4.13 writes
  ``samples_<task>_<timestamp>.jsonl``, one line per document and filter, with
  ``doc`` (our docs carry ``document`` and ``summary``), ``target``, ``resps`` (a list
  per request of generated strings), ``filtered_resps`` (one per request, after the
  filter) and ``doc_id``. The prediction is ``filtered_resps`` (what the task scored).
* a table of predictions: CSV / TSV, JSON lines, or a JSON list of records, such as
  the AdaptEval release's prediction CSVs (``doc_id, prompt_0, prediction, reference,
  rouge1, rouge2, rougeL, article``) or DomainSum-style output records (``summary`` =
  the reference, ``prediction``). Columns: ``--prediction-column`` etc., else the one
  conventional name present (:mod:`~lm_eval_tasks.rescoring.inputs`). Why strict: a missing column, two
  candidate columns, a non-string or non-UTF-8 field, or a line that is not JSON is an
  error naming the file, row/line and field, since a silently misread column gives
  plausible wrong numbers; a row with an empty prediction or reference is skipped and
  listed with why (``skipped_rows``), never scored as 0.

Predictions are stripped as the tasks strip them and scored through the metric
registry (:mod:`custom_metrics.registry`), so a re-scored number is the number a
harness run of the same predictions reports.

``--metrics`` takes any registry family (``rouge``, ``bertscore``, ``dvo``, ``judge``,
``fm``, ``ccs_length``, ``ccs_keywords``, ``ccs_readability``, ``ccs_focus``, each
family of the medqsum battery) or any single key of one (``rouge1``, ``coherence``, ``fm_vanilla``,
``meteor``, ...): a key selects its family and restricts the output, and the cost,
to the chosen keys. A name that is both a family and one of its keys (``fm``,
``dvo``) means the key, so ``fm`` alone makes no vanilla-rating calls, as before.
Without ``--metrics`` the task's catalogue families are scored (``--task``, or the
task a samples file name names): the paper's metrics for that benchmark.

* ``dvo`` reads ``--vocabulary FILE``, or the domain's vocabulary under
  ``--vocab-dir`` / ``DOMSUM_VOCAB_DIR``.
* judge families (``judge`` and its three ratings, ``fm`` / ``fm_vanilla``,
  ``ccs_focus``) use the judge of ``--judge-model`` / ``DOMSUM_JUDGE_MODEL`` etc.; no
  judge configured = skipped with one notice, as in the tasks. Answers are cached, so
  a re-run costs nothing. Only the chosen judge ratings are requested.
* ``fm`` keeps, per sample, the four facet fractions, ratings and extracted segments
  (``fm_detail``), so every score is explainable.
* CCSBench families read the record's control fields (``length_bin``, ``keywords``,
  ``readability``, ``focus``).

Writes, next to each input (or into ``--out``): ``<stem>.scores.jsonl`` (one line
per sample: ``doc_id``, ``id``, ``filter`` (samples files), ``prediction`` and its
per-document values; NaN written as null) and ``<stem>.summary.json``: corpus scores
aggregated as the harness does; ``intervals``, a seeded percentile bootstrap 95%
interval per key over documents (``--bootstrap N``, ``--seed``, recorded under
``bootstrap``; corpus keys recompute their corpus function per resample, except the
slow ones whose key record says why (``Key.no_interval``), null with the
reason); ``agreement`` where the input carries its own per-document scores (max |file - ours| per column, the evidence
that a release's numbers are reproduced row for row); judge parse failures / mode /
usage, what each family recorded, the settings and columns used.

    domsum rescore out/model/samples_adapteval_pubmed_*.jsonl \\
        --metrics rouge,dvo,judge --judge-model gpt-4o-mini --vocab-dir ~/vocab
    domsum rescore release/pubmed_predictions.csv --task adapteval_pubmed --metrics rouge \\
        --out out/rescored

Progress bars (one per family: ROUGE and DVO per document, BERTScore per encoder batch,
judge requests) go to stderr; ``--no-progress`` or ``DOMSUM_PROGRESS=0`` turns them off.

The task is looked up in the task catalogue for its benchmark and domain
(``--benchmark`` / ``--domain`` override them); a task of the user's own is found through
``--include_path FOLDER`` (as lm_eval's: a folder of task YAMLs) or
``$DOMSUM_INCLUDE_PATH``, or from the results file of its run. An input whose task is
none of these, with no ``--benchmark``, is refused in one line asking for the task: the
benchmarks' ROUGE conventions differ and none is guessed. Every setting (flags, then
``--metadata``, then the settings the run recorded in the results file beside a samples
file, or else those a user task's YAML gives (:mod:`~lm_eval_tasks.rescoring.recorded`),
then the environment) is resolved by :mod:`lm_eval_tasks.settings`, as in a harness run.
"""

from lm_eval_tasks.rescoring.options import Options, ScoreError, flagged, setting_flags
from lm_eval_tasks.rescoring.scoring import rescore, summary_text

__all__ = ["Options", "ScoreError", "flagged", "rescore", "setting_flags", "summary_text"]
