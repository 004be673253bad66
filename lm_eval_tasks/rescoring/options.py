"""What a rescore is asked to do (the ``domsum rescore`` flags, resolved; the flags that set a
settings row, as the row declares them), and its error type."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from custom_metrics.errors import SuiteError


class ScoreError(SuiteError, RuntimeError):
    """A requested metric cannot run (missing module, vocabulary, bad input)."""


@dataclass
class Options:
    """The settings of one rescore, shared by every input file.

    ``metadata`` holds every resolved setting (flags over ``--metadata``), read through
    :mod:`lm_eval_tasks.settings` as in a harness run; the other fields say how inputs
    are read and where the outputs go.
    """

    metadata: dict[str, Any] = field(default_factory=dict)
    #: suite task the predictions are for (default: the one a samples file names)
    task: str | None = None
    benchmark: str | None = None
    domain: str | None = None
    #: DVO vocabulary file (default: the domain's under the vocabulary root)
    vocabulary: str | None = None
    max_document_words: int | None = None
    #: samples files: the filter to score (default: the file's first)
    filter: str | None = None
    #: score only the first N samples
    limit: int | None = None
    prediction_column: str | None = None
    reference_column: str | None = None
    document_column: str | None = None
    id_column: str | None = None
    #: bootstrap resamples of the 95% intervals (0: none) and their seed
    bootstrap: int = 1000
    seed: int = 1234
    #: output folder (None: next to each input)
    out: Path | None = None
    overwrite: bool = False


def setting_flags(group: Any, *keys: str) -> None:
    """A ``--<key>`` flag for each settings row of ``keys``, as the row declares it (``flag``:
    its help; its type and choices), so a flag and its setting cannot drift apart."""
    from lm_eval_tasks.settings import SETTINGS

    for row in (SETTINGS[k] for k in keys):
        group.add_argument("--" + row.key.replace("_", "-"), type=row.flag_type,
                           choices=row.flag_choices or row.choices, help=row.flag or None)


def flagged(args: Any) -> dict[str, Any]:
    """The values of the settings flags :func:`setting_flags` added to a parser, by key."""
    from lm_eval_tasks.settings import SETTINGS

    return {k: getattr(args, k) for k, row in SETTINGS.items() if row.flag is not None and hasattr(args, k)}
