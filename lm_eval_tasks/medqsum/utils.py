"""Harness entry point of this task folder: the YAMLs name ``utils.SuiteTask``."""

from lm_eval_tasks.harness import SuiteTask  # noqa: F401
