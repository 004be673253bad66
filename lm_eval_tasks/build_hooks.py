"""Installation hook: a startup line that masks keys in plain ``lm_eval``'s log lines.

Why at installation, and not in the suite's code: ``lm_eval --model local-chat-completions
--model_args base_url=http://user:KEY@host/v1/...`` logs ``--model_args`` at INFO ("Initializing
... model, with arguments: ...") while it builds the model, before it loads any task, so
before any module of the suite has been imported. The only code that runs earlier is
Python's own start-up, which executes the ``import`` lines of every ``*.pth`` file in
site-packages. The suite therefore installs one such file, :data:`PTH_NAME`, holding
:data:`PTH_LINE`: in a process started as ``lm_eval`` (the console script or ``python -m
lm_eval``) and nowhere else, it calls :func:`custom_metrics.secrets.install_log_masking`,
which masks every log record of the process as it is made (``domsum run`` calls the same
function first thing). Any other Python process pays a look at ``sys.orig_argv``.

The line is written by :class:`build_py` (``setup.cfg``'s ``cmdclass``): into the wheel's
root for ``pip install .``, and, for ``pip install -e .``, into the root of the editable
wheel setuptools assembles (its ``install`` command's ``install_lib``). Either way the
file is in the installation's RECORD, so ``pip uninstall`` removes it. ``.pth`` files run
in name order: ``domsum_eval_log_masking.pth`` comes after setuptools' ``__editable__.*``
ones, so an editable checkout is importable when it runs. A checkout that was moved or
deleted makes ``find_spec`` return nothing and the line do nothing.

Only imported by setuptools while it builds the package, never at run time.
"""

from __future__ import annotations

import os

from setuptools.command.build_py import build_py as _build_py

PTH_NAME = "domsum_eval_log_masking.pth"
PTH_LINE = ("import importlib.util, os, sys; "
            "any(os.path.basename(a).split('.')[0] in ('lm_eval', 'lm-eval') for a in sys.orig_argv[:3]) "
            "and importlib.util.find_spec('custom_metrics') is not None "
            "and importlib.import_module('custom_metrics.secrets').install_log_masking()\n")


class build_py(_build_py):  # noqa: N801 - setuptools' command name
    """setuptools' ``build_py`` that also writes :data:`PTH_NAME` (module docstring)."""

    def run(self) -> None:
        super().run()
        # an editable build keeps the modules in the checkout and builds the wheel from
        # what `install` would put in site-packages; a plain build from build_lib
        root = self.get_finalized_command("install").install_lib if self.editable_mode else self.build_lib
        os.makedirs(root, exist_ok=True)
        with open(os.path.join(root, PTH_NAME), "w", encoding="utf-8") as f:
            f.write(PTH_LINE)
