"""``domsum``: the suite's one command, with a subcommand per tool.

Follows the harness's ``lm-eval run|ls|validate`` layout. This module holds no
logic: it picks the subcommand from :data:`lm_eval_tasks.commands.COMMANDS` and hands
the remaining arguments to that command module's ``main(argv)`` (``domsum COMMAND --help`` is the command's own help), so
every command also runs as a function from Python and from tests.
"""

from __future__ import annotations

import importlib
import sys

from lm_eval_tasks.commands import COMMANDS, build_parser


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``argv`` (default: the command line) to the subcommand's ``main``.

    A :class:`~custom_metrics.errors.SuiteError` a command lets through (its message
    names the file, line, task or setting) becomes one line on stderr and exit status 2,
    never a traceback: the library raises, only this layer prints.
    """
    from custom_metrics import secrets
    from custom_metrics.errors import SuiteError

    secrets.install_log_masking()  # before any command logs: no key on any stream
    args = list(sys.argv[1:] if argv is None else argv)
    ns = build_parser().parse_args(args[:1])
    try:
        if ns.command != "include-path":  # the user's task folders ($DOMSUM_INCLUDE_PATH), before any lookup
            from lm_eval_tasks.catalog import register_folders

            register_folders()
        result = importlib.import_module(COMMANDS[ns.command][0]).main(args[1:])
        sys.stdout.flush()  # inside the try: a pipe closed early fails here, not at exit
    except SuiteError as exc:
        text = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(secrets.mask(f"domsum {ns.command}: error: {text}"), file=sys.stderr)
        return 2
    except BrokenPipeError:  # `domsum tasks | head`: the reader left; not an error of ours
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
