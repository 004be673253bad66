"""``domsum report`` without runs: an empty folder says so."""

from __future__ import annotations


from lm_eval_tasks.commands import report


def test_report_of_an_empty_folder_says_so(tmp_path):
    (tmp_path / "empty").mkdir()
    assert report.main([str(tmp_path / "empty"), "--out", str(tmp_path / "o"), "--no-progress"]) == 0
    md = (tmp_path / "o" / "report.md").read_text()
    assert "no results_*.json files" in md and (tmp_path / "o" / "report.html").is_file()
