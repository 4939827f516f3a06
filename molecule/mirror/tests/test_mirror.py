"""Assertions on the mirror server and on the client that installed from it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

MIRROR = "/srv/dlstack-mirror"


def _port() -> str:
    return (Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "mirror-port").read_text().strip()


def _role(host: Any) -> str:
    return str(host.backend.get_hostname())


def test_server_collected_a_flat_apt_repository(host: Any) -> None:
    if _role(host) != "mirror-server":
        pytest.skip("server-side check")
    debs = host.check_output(f"ls {MIRROR}/apt").split()
    assert any(d.startswith("hello_") and d.endswith(".deb") for d in debs), debs
    assert any(d.startswith("libc6_") for d in debs), "the dependency closure was not collected"
    assert "Package: hello" in host.file(f"{MIRROR}/apt/Packages").content_string
    assert host.file(f"{MIRROR}/apt/Release").exists


def test_server_built_a_simple_index(host: Any) -> None:
    if _role(host) != "mirror-server":
        pytest.skip("server-side check")
    page = host.file(f"{MIRROR}/pip/simple/six/index.html").content_string
    assert 'href="../../files/six-' in page and ".whl" in page
    assert 'href="six/"' in host.file(f"{MIRROR}/pip/simple/index.html").content_string


def test_server_serves_and_prints_the_fleet_settings(host: Any) -> None:
    if _role(host) != "mirror-server":
        pytest.skip("server-side check")
    assert host.service("dlstack-mirror").is_running
    assert host.service("dlstack-mirror").is_enabled
    served = host.check_output(
        f"python3 -c 'import urllib.request; print(urllib.request.urlopen(\"http://127.0.0.1:{_port()}/apt/Packages\").read().decode())'"
    )
    assert "Package: hello" in served
    fleet_vars = host.file(f"{MIRROR}/fleet-vars.yml").content_string
    assert f"python_env_pip_index_url: http://127.0.0.1:{_port()}/pip/simple/" in fleet_vars
    assert f"deb [trusted=yes] http://127.0.0.1:{_port()}/apt ./" in fleet_vars


def test_client_installed_the_deb_from_the_mirror(host: Any) -> None:
    if _role(host) != "mirror-client":
        pytest.skip("client-side check")
    assert host.check_output("hello") == "Hello, world!"
    lists = host.check_output("ls /var/lib/dlstack-mirror/lists").split()
    assert any(name.startswith(f"127.0.0.1:{_port()}_apt") for name in lists), lists
    fetched = host.check_output("ls /var/cache/dlstack-mirror/archives").split()
    assert any(name.startswith("hello_") for name in fetched), fetched


def test_client_installed_the_wheel_from_the_mirror(host: Any) -> None:
    if _role(host) != "mirror-client":
        pytest.skip("client-side check")
    out = host.check_output("PYTHONPATH=/opt/mirror-test/site python3 -c 'import six; print(six.__file__)'")
    assert out.startswith("/opt/mirror-test/site/")
    assert host.file("/opt/mirror-test/dlstack-test-1.0.txt").content_string == "dlstack mirror test file\n"
