"""The task's records as the ``datasets.Dataset`` the harness iterates.

Why a module of its own: turning mirror records into Arrow columns has its own failure
(mixed kinds in one field) and its own fallback, and needs no ``lm_eval`` import.
"""

from __future__ import annotations

import json
from typing import Any

import datasets


def as_dataset(docs: list[dict], report: dict[str, Any]) -> datasets.Dataset:
    """The records as a ``datasets.Dataset``.

    Why the fallback: Arrow needs one type per column, and a mirror whose extra fields
    mix kinds (an object in one record, text or a list in another) would stop the run
    with a pyarrow error. Such fields are kept as JSON text instead, and named in
    ``fields_as_text``; the suite's own fields are strings already.
    """
    import pyarrow as pa

    try:
        return datasets.Dataset.from_list(docs)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
        pass
    names = list(dict.fromkeys(k for d in docs for k in d))
    mixed = [n for n in names
             if len({type(d[n]).__name__ for d in docs if d.get(n) is not None}) > 1
             or any(isinstance(d.get(n), (dict, list)) for d in docs)]
    report["fields_as_text"] = mixed
    fixed = [{k: (json.dumps(v, ensure_ascii=False, default=str) if k in mixed and v is not None
                  and not isinstance(v, str) else v) for k, v in d.items()} for d in docs]
    return datasets.Dataset.from_list(fixed)


__all__ = ["as_dataset"]
