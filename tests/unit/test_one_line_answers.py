"""A mistake at a command's door is one line naming what to change, said before any work:
no traceback, no message about a file the command made itself, no file the user did not
ask for."""

from __future__ import annotations

import pytest

from lm_eval_tasks.commands import change_amplitude


@pytest.mark.parametrize("n", ["0", "-3"])
def test_change_amplitude_refuses_fewer_than_one_row_at_parsing(tmp_path, capsys, n):
    out = tmp_path / "ca"
    code = change_amplitude.main(["--model-args", "pretrained=no-such-model", "--n", n, "--out", str(out)])
    assert code == 2 and not out.exists()
    assert capsys.readouterr().err.splitlines() == [
        f"domsum change-amplitude: error: --n must be >= 1 (test rows sampled), got {n}"]
