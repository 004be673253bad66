"""Harness task folders of the domain-summarization suite.

``python -m lm_eval_tasks`` prints the absolute include path, so
``lm_eval --include_path "$(python -m lm_eval_tasks)" ...`` works from any directory.
"""

from pathlib import Path

TASKS_DIR = Path(__file__).resolve().parent


def include_path() -> str:
    """Absolute path to give ``lm_eval --include_path``."""
    return str(TASKS_DIR)


def sample_data_dir() -> Path:
    """The small hand-written data mirror shipped inside the package (``sample_data/``).

    Package data rather than a test fixture so that ``domsum demo`` runs from an
    installed wheel; the tests read the same files, so there is one mirror to maintain.
    """
    return TASKS_DIR / "sample_data"
