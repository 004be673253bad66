"""Release conversion into the mirror layout."""

import json


from lm_eval_tasks.data.loader import load_split
from lm_eval_tasks.commands.prepare_data import main
from lm_eval_tasks.benchmarks.domainsum.release import DEFAULT_TOPIC_ORDER, release_target


def test_release_names():
    t = DEFAULT_TOPIC_ORDER
    assert release_target("cnndm_test_sampled_500.json", t) == ("cnndm", "test")
    assert release_target("washington_valid_sampled_500.json", t) == ("wapo", "validation")
    assert release_target("topic3_train_sampled_10000.json", t) == ("family", "train")
    assert release_target("samsum_train_sampled_20.json", t) == ("samsum", "train_pool20")
    assert release_target("README.md", t) is None


STYLE_FILES = ("cnn", "fox", "nydaily", "nytimes", "washington")


def _release(rel, names=STYLE_FILES, skip=()):
    """A complete style level of the release (test/valid/train/pool20 per domain), less ``skip``."""
    rel.mkdir(exist_ok=True)
    recs = [{"document": f"doc {i}", "summary": f"sum {i}"} for i in range(3)]
    for d in names:
        for name, rows in ((f"{d}_test_sampled_500.json", recs), (f"{d}_valid_sampled_500.json", recs),
                           (f"{d}_train_sampled_10000.json", recs), (f"{d}_train_sampled_20.json", recs[:2])):
            if name not in skip:
                (rel / name).write_text(json.dumps(rows))
    return rel


def test_convert_release_folder(tmp_path, capsys):
    rel = _release(tmp_path / "release")
    out = tmp_path / "mirror"
    assert main(["--release", str(rel), "--out", str(out)]) == 0
    assert [r["summary"] for r in load_split("domainsum", "fox", "test", out)] == ["sum 0", "sum 1", "sum 2"]
    assert len(load_split("domainsum", "fox", "train_pool20", out)) == 2


def test_bad_release_item_is_named(tmp_path, capsys):
    rel = tmp_path / "release"
    rel.mkdir()
    (rel / "cnn_test_sampled_500.json").write_text(json.dumps([{"document": "x"}]))
    assert main(["--release", str(rel), "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert "cnn_test_sampled_500.json, item 0" in err and "'summary'" in err


def test_hub_refuses_style_level(tmp_path, capsys):
    assert main(["--hub", "--benchmark", "domainsum", "--level", "style", "--out", str(tmp_path)]) == 2
    assert "release" in capsys.readouterr().err


def test_missing_release_file_fails_naming_it(tmp_path, capsys):
    rel = _release(tmp_path / "release", skip=("nytimes_valid_sampled_500.json",))
    assert main(["--release", str(rel), "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert "incomplete" in err and "style/nytimes: nytimes_valid_sampled_*.json" in err
    assert "mirror ready" not in err


def test_misnamed_and_truncated_release_files_are_named(tmp_path, capsys):
    rel = _release(tmp_path / "release")
    (rel / "fox_test_sample_500.json").write_text("[]")
    assert main(["--release", str(rel), "--out", str(tmp_path / "m")]) == 2
    assert "fox_test_sample_500.json" in capsys.readouterr().err
    (rel / "fox_test_sample_500.json").unlink()
    (rel / "cnn_test_sampled_500.json").write_text('[{"document": "a", "summ')
    assert main(["--release", str(rel), "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert "cnn_test_sampled_500.json: not valid JSON" in err and "truncated" in err



def test_two_files_for_one_split_and_an_out_file_are_errors(tmp_path, capsys):
    rel = _release(tmp_path / "release")
    (rel / "fox_test_sampled_1000.json").write_text(json.dumps([{"document": "d", "summary": "s"}]))
    assert main(["--release", str(rel), "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert "fox_test_sampled_1000.json" in err and "fox_test_sampled_500.json" in err and "both map" in err
    assert not (tmp_path / "m").exists()  # nothing written
    (rel / "fox_test_sampled_1000.json").unlink()
    (tmp_path / "a_file").write_text("x")
    assert main(["--release", str(rel), "--out", str(tmp_path / "a_file")]) == 2
    assert "is a file" in capsys.readouterr().err


def test_a_failed_conversion_leaves_the_mirror_as_it_was_and_nothing_is_replaced_unasked(tmp_path, capsys):
    rel = _release(tmp_path / "release")
    out = tmp_path / "mirror"
    assert main(["--release", str(rel), "--out", str(out)]) == 0
    before = {p: p.read_bytes() for p in out.rglob("*.jsonl")}
    # a later release whose last file is bad: every split stays as it was
    (rel / "cnn_test_sampled_500.json").write_text(json.dumps([{"document": "new", "summary": "new"}]))
    (rel / "washington_valid_sampled_500.json").write_text('[{"document": 1}]')
    assert main(["--release", str(rel), "--out", str(out)]) == 2
    assert {p: p.read_bytes() for p in out.rglob("*.jsonl")} == before
    # a good newer release: the changed split needs --overwrite; unchanged ones are left alone
    _release(rel)
    (rel / "cnn_test_sampled_500.json").write_text(json.dumps([{"document": "new", "summary": "new"}]))
    assert main(["--release", str(rel), "--out", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err and {p: p.read_bytes() for p in out.rglob("*.jsonl")} == before
    assert main(["--release", str(rel), "--out", str(out), "--overwrite"]) == 0
    assert [r["document"] for r in load_split("domainsum", "cnn", "test", out)] == ["new"]
    assert not list(out.rglob(".*.partial"))
