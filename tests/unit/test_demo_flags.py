"""``domsum demo``'s flags follow the command convention (no model, no harness)."""

from __future__ import annotations

from pathlib import Path


from lm_eval_tasks.commands import demo as demo_command


def test_demo_flags_follow_the_command_convention():
    parse = demo_command.build_parser().parse_args
    assert parse([]).out == Path("domsum_demo") and parse([]).data_dir is None
    for flag in ("--out", "--output-path", "--output_path"):
        assert parse([flag, "x"]).out == Path("x")
    for flag in ("--data-dir", "--data_dir"):
        assert parse([flag, "d"]).data_dir == Path("d")
    assert parse(["--no-progress", "--batch_size", "2"]).no_progress and parse(["--batch-size", "2"]).batch_size == 2
