"""gpulab.dlstack.fingerprint on real files: a gate and a cached probe see every change that matters, and only those."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Dict, Tuple

import pytest
from ansible_collections.gpulab.dlstack.plugins.filter.rerun import whole_stage_filter
from ansible_collections.gpulab.dlstack.plugins.module_utils import _fingerprint
from ansible_collections.gpulab.dlstack.plugins.modules import fingerprint

Runner = Callable[..., Tuple[bool, Dict[str, Any]]]


@pytest.fixture
def tree(tmp_path: Path) -> Dict[str, Any]:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "profile.sh").write_text("export A=1\n")
    site = tmp_path / "env" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (site / "numpy-2.1.3.dist-info").mkdir()
    return {
        "root": tmp_path,
        "site": site,
        "paths": [str(tmp_path / "etc" / "profile.sh"), str(tmp_path / "etc")],
        "listings": [str(tmp_path / "env" / "lib" / "python*" / "site-packages")],
        "record": str(tmp_path / "state" / "rerun" / "stage.json"),
    }


def gate(run_module: Runner, tree: Dict[str, Any], **extra: Any) -> Dict[str, Any]:
    check = extra.pop("_check", False)
    args = {"paths": tree["paths"], "listings": tree["listings"], "inputs": {"want": 1}, "record": tree["record"]}
    args.update(extra)
    failed, result = run_module(fingerprint.main, args, check_mode=check)
    assert not failed, result
    assert result["changed"] is False
    return result


def test_a_gate_matches_only_the_state_it_recorded(run_module: Runner, tree: Dict[str, Any]) -> None:
    assert gate(run_module, tree)["unchanged"] is False  # no record yet
    saved = gate(run_module, tree, save=True, data={"note": "whole run"})
    assert saved["saved"] is True and Path(tree["record"]).exists()
    again = gate(run_module, tree)
    assert again["unchanged"] is True and again["data"] == {"note": "whole run"}
    assert gate(run_module, tree, inputs={"want": 2})["unchanged"] is False  # what the run would apply changed


@pytest.mark.parametrize(
    "change",
    [
        lambda t: (t["root"] / "etc" / "profile.sh").write_text("export A=2\n"),  # content
        lambda t: os.chmod(t["root"] / "etc" / "profile.sh", 0o600),  # mode
        lambda t: os.chmod(t["root"] / "etc", 0o700),  # a directory's mode
        lambda t: (t["root"] / "etc" / "profile.sh").unlink(),  # a managed file removed
        lambda t: (t["site"] / "numpy-2.1.3.dist-info").rename(t["site"] / "numpy-2.2.0.dist-info"),  # a version
    ],
    ids=["content", "mode", "dir-mode", "removed", "listed-version"],
)
def test_a_gate_sees_every_change_to_what_it_covers(
    run_module: Runner, tree: Dict[str, Any], change: Callable[[Dict[str, Any]], Any]
) -> None:
    gate(run_module, tree, save=True)
    change(tree)
    assert gate(run_module, tree)["unchanged"] is False


def test_a_directory_not_listed_may_gain_files(run_module: Runner, tree: Dict[str, Any]) -> None:
    gate(run_module, tree, save=True)
    (tree["root"] / "etc" / "other").write_text("another stage's file\n")
    assert gate(run_module, tree)["unchanged"] is True


def test_check_mode_writes_no_record(run_module: Runner, tree: Dict[str, Any]) -> None:
    result = gate(run_module, tree, save=True, _check=True)
    assert result["saved"] is False and not Path(tree["record"]).exists()


def probe(run_module: Runner, tree: Dict[str, Any], script: str, **extra: Any) -> Dict[str, Any]:
    counter = tree["root"] / "runs"
    body = f"echo x >> {counter}\n{script}"
    return gate(run_module, tree, argv=["/bin/sh", "-s"], stdin=body, inputs={"script": body}, save=True, **extra)


def runs(tree: Dict[str, Any]) -> int:
    counter = tree["root"] / "runs"
    return len(counter.read_text().splitlines()) if counter.exists() else 0


def test_a_probe_runs_once_then_answers_from_its_record(run_module: Runner, tree: Dict[str, Any]) -> None:
    first = probe(run_module, tree, "echo '{\"ok\": true}'")
    assert first["probed"] is True and first["stdout_lines"] == ['{"ok": true}'] and runs(tree) == 1
    record = _fingerprint.read_record(tree["record"])
    assert record["result"] == {"ok": True} and record["fingerprint"] == first["fingerprint"]
    second = probe(run_module, tree, "echo '{\"ok\": true}'")
    assert second["probed"] is False and second["stdout"] == first["stdout"] and runs(tree) == 1
    forced = probe(run_module, tree, "echo '{\"ok\": true}'", force=True)
    assert forced["probed"] is True and runs(tree) == 2
    (tree["root"] / "etc" / "profile.sh").write_text("export A=3\n")
    assert probe(run_module, tree, "echo '{\"ok\": true}'")["probed"] is True and runs(tree) == 3


def test_a_failed_probe_is_never_reused(run_module: Runner, tree: Dict[str, Any]) -> None:
    assert probe(run_module, tree, "echo broken >&2; exit 3")["rc"] == 3
    again = probe(run_module, tree, "echo broken >&2; exit 3")
    assert again["probed"] is True and again["rc"] == 3 and "broken" in again["stderr"] and runs(tree) == 2


def test_stdin_without_a_command_is_refused(run_module: Runner, tree: Dict[str, Any]) -> None:
    failed, result = run_module(fingerprint.main, {"record": tree["record"], "stdin": "echo hi"})
    assert failed and "stdin is set but argv is not" in result["msg"]


def test_a_record_of_another_shape_is_ignored(tmp_path: Path) -> None:
    record = tmp_path / "r.json"
    record.write_text('["not", "a", "record"]')
    assert _fingerprint.read_record(str(record)) == {}
    record.write_text('{"fingerprint": "x"}')  # no version: written by something else
    assert _fingerprint.read_record(str(record)) == {}


def test_a_link_is_recorded_by_its_target_and_what_it_holds(tmp_path: Path) -> None:
    (tmp_path / "nvcc-12.5").write_text("release 12.5\n")
    (tmp_path / "nvcc").symlink_to(tmp_path / "nvcc-12.5")
    before = _fingerprint.path_state(str(tmp_path / "nvcc"))
    assert before[:3] == [str(tmp_path / "nvcc"), "link", str(tmp_path / "nvcc-12.5")]
    (tmp_path / "nvcc-12.5").write_text("release 12.6\n")
    assert _fingerprint.path_state(str(tmp_path / "nvcc")) != before


@pytest.mark.parametrize(
    ("run_tags", "skip_tags", "whole"),
    [
        (["all"], [], True),
        (["common"], [], True),
        (["tensorflow"], [], False),
        (["common_profile"], [], False),
        (["all"], ["verify"], True),
        (["all"], ["common_layout"], False),
        (["all"], ["common"], False),
        ([], [], True),
    ],
)
def test_whole_stage_follows_the_tag_selection(run_tags: list, skip_tags: list, whole: bool) -> None:
    assert whole_stage_filter("common", run_tags, skip_tags) is whole
