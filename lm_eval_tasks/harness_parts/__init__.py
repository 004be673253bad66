"""The parts of the harness adapter (:mod:`lm_eval_tasks.harness`) that need no ``lm_eval``.

Why a package of its own: the adapter is the one module that may import ``lm_eval``,
so it holds only what talks to the harness (the task class's hooks and the CLI); how a
shard is scored, how prompts are fitted and recorded, how generations are saved and
how data-parallel ranks are gathered are plain code beside it, each in a module small
enough to read against its tests.
"""
