"""The one fetch-check-unpack of a vendor archive (common's archive.yml, used by cuda_toolkit, cudnn and tensorrt), run
for real on this machine: an archive from the controller and one over HTTP are unpacked once (a re-run changes
nothing), a wrong checksum or an unreachable URL fails with the setting to fix and leaves no prefix behind, check mode
writes nothing, and a .run installer gets the caller's arguments."""

from __future__ import annotations

import functools
import hashlib
import http.server
import io
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible_collections.gpulab.dlstack.tests.unit.playbook_run import AnsiblePlaybook, PlaybookRun

FIX = "Set test_tarball to a reachable source."


def _tarball(path: Path) -> str:
    """A vendor-style archive (one top folder) holding include/probe.h and lib/libprobe.so.1; returns its checksum."""
    with tarfile.open(path, "w:xz") as tar:
        for name, text in {
            "include/probe.h": "#define PROBE 1\n",
            "lib/libprobe.so.1": "not really a library\n",
        }.items():
            data = text.encode()
            info = tarfile.TarInfo(f"probe-1.0-linux-x86_64/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(name="server")
def _server(tmp_path: Path) -> Iterator[str]:
    """An HTTP server on a free local port serving tmp_path/www."""
    (tmp_path / "www").mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path / "www"))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()


def _run(
    ansible_playbook: AnsiblePlaybook, tmp_path: Path, archive: dict[str, Any], *args: str, **extra: Any
) -> PlaybookRun:
    playbook = tmp_path / "archive.yml"
    playbook.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "An archive",
                    "hosts": "all",
                    "gather_facts": False,
                    "tasks": [
                        {
                            "name": "Fetch, check and unpack",
                            "ansible.builtin.include_role": {"name": "gpulab.dlstack.common", "tasks_from": "archive"},
                            "vars": {
                                "common_archive": archive,
                                "common_archive_cache": str(tmp_path / "cache"),
                                "common_archive_prefix": str(tmp_path / "prefix"),
                                "common_archive_timeout": 5,
                                "common_archive_what": "the test archive",
                                "common_archive_var": "test_tarball.checksum",
                                "common_archive_fix": FIX,
                                **extra,
                            },
                        }
                    ],
                }
            ]
        )
    )
    return ansible_playbook.run(playbook, *args)


def _message(run: PlaybookRun) -> str:
    return " ".join(run.output.split())


def test_an_archive_from_the_controller_is_unpacked_once(ansible_playbook: AnsiblePlaybook, tmp_path: Path) -> None:
    checksum = _tarball(tmp_path / "probe.tar.xz")
    archive = {"src": str(tmp_path / "probe.tar.xz"), "checksum": checksum}
    first = _run(ansible_playbook, tmp_path, archive)
    assert first.rc == 0 and first.changed() > 0, first.output[-3000:]
    assert (tmp_path / "prefix" / "include" / "probe.h").read_text() == "#define PROBE 1\n"
    record = tmp_path / "prefix" / f".dlstack-archive-{checksum.split(':')[1][:16]}"
    assert record.read_text() == f"probe.tar.xz {checksum}\n"
    again = _run(ansible_playbook, tmp_path, archive)
    assert again.rc == 0 and again.changed() == 0, again.output[-3000:]


def test_an_archive_over_http_is_checked_and_unpacked(
    ansible_playbook: AnsiblePlaybook, tmp_path: Path, server: str
) -> None:
    checksum = _tarball(tmp_path / "www" / "probe.tar.xz")
    run = _run(
        ansible_playbook, tmp_path, {"file": "probe.tar.xz", "checksum": checksum}, common_archive_base_url=server + "/"
    )
    assert run.rc == 0, run.output[-3000:]
    assert (tmp_path / "prefix" / "lib" / "libprobe.so.1").is_file()
    assert (tmp_path / "cache" / "probe.tar.xz").is_file()


def test_a_wrong_checksum_names_the_setting_and_unpacks_nothing(
    ansible_playbook: AnsiblePlaybook, tmp_path: Path
) -> None:
    _tarball(tmp_path / "probe.tar.xz")
    wrong = "sha256:" + "0" * 64
    run = _run(ansible_playbook, tmp_path, {"src": str(tmp_path / "probe.tar.xz"), "checksum": wrong})
    assert run.rc != 0, run.output[-3000:]
    message = _message(run)
    assert "Fetching or unpacking the test archive probe.tar.xz" in message, message[-3000:]
    assert f"expected {'0' * 64}; fix the checksum in test_tarball.checksum or replace the file." in message
    assert FIX in message
    assert not (tmp_path / "prefix").exists(), "a prefix was made for an archive that failed its checksum"


def test_a_wrong_checksum_over_http_is_refused_by_the_download(
    ansible_playbook: AnsiblePlaybook, tmp_path: Path, server: str
) -> None:
    _tarball(tmp_path / "www" / "probe.tar.xz")
    wrong = "sha256:" + "1" * 64
    run = _run(ansible_playbook, tmp_path, {"url": f"{server}/probe.tar.xz", "checksum": wrong})
    assert run.rc != 0, run.output[-3000:]
    assert f"({server}/probe.tar.xz) failed:" in _message(run)
    assert not (tmp_path / "prefix").exists()


def test_an_unreachable_url_fails_with_the_fix(ansible_playbook: AnsiblePlaybook, tmp_path: Path, server: str) -> None:
    run = _run(ansible_playbook, tmp_path, {"url": f"{server}/missing.tar.xz", "checksum": "sha256:" + "2" * 64})
    assert run.rc != 0, run.output[-3000:]
    message = _message(run)
    assert f"Fetching or unpacking the test archive missing.tar.xz ({server}/missing.tar.xz) failed:" in message
    assert message.count(FIX) >= 1
    assert not (tmp_path / "prefix").exists()


def test_check_mode_writes_nothing(ansible_playbook: AnsiblePlaybook, tmp_path: Path) -> None:
    checksum = _tarball(tmp_path / "probe.tar.xz")
    run = _run(ansible_playbook, tmp_path, {"src": str(tmp_path / "probe.tar.xz"), "checksum": checksum}, "--check")
    assert run.rc == 0, run.output[-3000:]
    assert not (tmp_path / "prefix").exists() and not (tmp_path / "cache").exists()


def test_a_run_installer_gets_the_callers_arguments(ansible_playbook: AnsiblePlaybook, tmp_path: Path) -> None:
    installer = tmp_path / "probe_1.0_linux.run"
    # It writes its arguments beside itself (the copy in the download cache).
    installer.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done > "$(dirname "$0")/args"\n')
    checksum = "sha256:" + hashlib.sha256(installer.read_bytes()).hexdigest()
    args_file = tmp_path / "cache" / "args"
    run = _run(
        ansible_playbook,
        tmp_path,
        {"src": str(installer), "checksum": checksum},
        common_archive_run_args=["--silent", "--toolkit", f"--toolkitpath={tmp_path / 'prefix'}"],
    )
    assert run.rc == 0, run.output[-3000:]
    assert args_file.read_text().split() == ["--silent", "--toolkit", f"--toolkitpath={tmp_path / 'prefix'}"]
    again = _run(
        ansible_playbook,
        tmp_path,
        {"src": str(installer), "checksum": checksum},
        common_archive_run_args=["--silent"],
    )
    assert again.rc == 0 and again.changed() == 0, again.output[-3000:]
