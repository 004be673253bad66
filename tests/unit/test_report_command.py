"""``domsum report`` with nothing to report: an empty or missing folder is one line and exit 2,
and no report is written (an empty page would pass for a finished one)."""

from __future__ import annotations


from lm_eval_tasks.commands import report


def test_report_of_an_empty_folder_is_an_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert report.main([str(tmp_path / "empty"), "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("report: error: no suite task with results in ")
    assert not (tmp_path / "o").exists()


def test_report_of_a_missing_folder_names_it(tmp_path, capsys):
    missing = tmp_path / "nowhere"
    assert report.main([str(missing), "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    assert capsys.readouterr().err.strip() == f"report: error: no such folder: {missing}"
    assert not (tmp_path / "o").exists()


def test_a_label_that_cannot_name_a_run_is_one_line(tmp_path, capsys):
    (tmp_path / "runs").mkdir()
    for spec, want in (("runs", "--label 'runs': give RUN_FOLDER=NAME"),
                       (f"{tmp_path / 'runs'}=a\nb", "NAME must be text (one line, at most 80 characters)")):
        assert report.main([str(tmp_path / "runs"), "--label", spec, "--out", str(tmp_path / "o"),
                            "--no-progress"]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and err.startswith("report: error: --label ") and want in err
        assert not (tmp_path / "o").exists()
