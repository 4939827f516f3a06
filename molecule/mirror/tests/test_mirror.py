"""Assertions on the mirror server and on the client that installed from it, and tampered copies refused."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

MIRROR = "/srv/dlstack-mirror"
GNUPG = "/etc/dlstack-mirror/gnupg"
KEY = f"{MIRROR}/dlstack-mirror.asc"
TAMPERED = "/srv/tampered"
TAMPER_UNIT = "dlstack-mirror-tampered"


def _port() -> str:
    return (Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "mirror-port").read_text().strip()


def _role(host: Any) -> str:
    return str(host.backend.get_hostname())


def _server_only(host: Any) -> None:
    if _role(host) != "mirror-server":
        pytest.skip("server-side check")


def _client_only(host: Any) -> None:
    if _role(host) != "mirror-client":
        pytest.skip("client-side check")


def test_server_collected_a_signed_flat_apt_repository(host: Any) -> None:
    _server_only(host)
    debs = host.check_output(f"ls {MIRROR}/apt").split()
    assert any(d.startswith("hello_") and d.endswith(".deb") for d in debs), debs
    assert any(d.startswith("libc6_") for d in debs), "the dependency closure was not collected"
    assert "Package: hello" in host.file(f"{MIRROR}/apt/Packages").content_string
    host.run_expect([0], f"gpg --dearmor < {KEY} > /tmp/mirror-keyring.gpg")
    for signed in ("InRelease", "Release.gpg Release"):
        out = host.run(f"cd {MIRROR}/apt && gpgv --keyring /tmp/mirror-keyring.gpg {signed}")
        assert out.rc == 0 and "Good signature" in out.stderr, out.stderr


def test_signing_key_is_root_only_and_never_served(host: Any) -> None:
    _server_only(host)
    home = host.file(GNUPG)
    assert home.user == "root" and home.mode == 0o700
    assert host.check_output(f"find {GNUPG} -perm /077 ! -type s") == ""
    assert host.check_output(f"find {GNUPG}/private-keys-v1.d -type f").strip(), "no private key in the key's home"
    assert host.run(f"grep -rl 'PRIVATE KEY' {MIRROR}").stdout == ""
    assert host.file("/root/src/mirror.key").mode == 0o600


def test_server_built_a_hashed_simple_index(host: Any) -> None:
    _server_only(host)
    page = host.file(f"{MIRROR}/pip/simple/six/index.html").content_string
    digest = host.check_output(f"cd {MIRROR}/pip/files && sha256sum six-*.whl").split()[0]
    assert f".whl#sha256={digest}" in page
    assert 'href="six/"' in host.file(f"{MIRROR}/pip/simple/index.html").content_string
    assert f"--hash=sha256:{digest}" in host.file(f"{MIRROR}/pip/requirements-hashes.txt").content_string


def test_server_serves_https_and_writes_the_fleet_settings(host: Any) -> None:
    _server_only(host)
    assert host.service("dlstack-mirror").is_running
    assert host.service("dlstack-mirror").is_enabled
    served = host.check_output(
        'python3 -c \'import ssl, urllib.request; ctx = ssl.create_default_context(cafile="/root/src/mirror.crt");'
        f' print(urllib.request.urlopen("https://127.0.0.1:{_port()}/apt/Packages", context=ctx).read().decode())\''
    )
    assert "Package: hello" in served
    fleet_vars = host.file(f"{MIRROR}/fleet-vars.yml").content_string
    assert f"mirror_client_url: https://localhost:{_port()}" in fleet_vars
    assert f"python_env_pip_index_url: https://localhost:{_port()}/pip/simple/" in fleet_vars
    assert "python_env_pip_trusted_hosts" not in fleet_vars
    assert "BEGIN PGP PUBLIC KEY BLOCK" in fleet_vars and "PRIVATE" not in fleet_vars
    assert "signed-by=/etc/apt/keyrings/dlstack-mirror.asc" in fleet_vars
    assert "trusted=yes" not in fleet_vars


def test_client_installed_the_deb_from_the_signed_mirror(host: Any) -> None:
    _client_only(host)
    assert host.check_output("hello") == "Hello, world!"
    source = host.file("/etc/apt/sources.list.d/dlstack-mirror.list").content_string
    assert source == f"deb [signed-by=/etc/apt/keyrings/dlstack-mirror.asc] https://localhost:{_port()}/apt ./\n"
    lists = host.check_output("ls /var/lib/dlstack-mirror/lists").split()
    assert any(name.startswith(f"localhost:{_port()}_apt") and name.endswith("InRelease") for name in lists), lists
    fetched = host.check_output("ls /var/cache/dlstack-mirror/archives").split()
    assert any(name.startswith("hello_") for name in fetched), fetched


def test_client_installed_the_wheel_with_hashes(host: Any) -> None:
    _client_only(host)
    out = host.check_output("PYTHONPATH=/opt/mirror-test/site python3 -c 'import six; print(six.__file__)'")
    assert out.startswith("/opt/mirror-test/site/")
    assert "--hash=sha256:" in host.file("/etc/dlstack/mirror/requirements-hashes.txt").content_string
    assert host.file("/opt/mirror-test/dlstack-test-1.0.txt").content_string == "dlstack mirror test file\n"


# Tampered copies of the mirror, served over plain HTTP from the server as an attacker on the path (or one who
# changed files on the mirror) would; the server plays the client, with only the published public key to trust.
TAMPER = f"""
set -e
rm -rf {TAMPERED}
for c in good index release forged unsigned deb wheel page; do
  mkdir -p {TAMPERED}/$c
  cp -a {MIRROR}/apt {MIRROR}/pip {TAMPERED}/$c/
done
cd {TAMPERED}/index/apt
sed -i 's/^Description: .*/Description: evil/' Packages
gzip -9cn Packages > Packages.gz
cd {TAMPERED}/release/apt
sed -i 's/^Date: .*/Date: Thu, 01 Jan 2037 00:00:00 UTC/' InRelease
rm Release.gpg
cd {TAMPERED}/unsigned/apt
rm InRelease Release.gpg
cd {TAMPERED}/deb/apt
printf evil >> "$(ls hello_*.deb)"
cd {TAMPERED}/forged/apt
printf evil >> "$(ls hello_*.deb)"
apt-ftparchive packages . > Packages
gzip -9cn Packages > Packages.gz
apt-ftparchive release . > Release
export GNUPGHOME=$(mktemp -d)
gpg --batch --passphrase '' --quick-generate-key 'attacker <evil@example.invalid>' ed25519 sign never 2>/dev/null
gpg --batch --yes --clearsign -o InRelease Release
gpg --batch --yes -abs -o Release.gpg Release
rm -rf "$GNUPGHOME"
cd {TAMPERED}/wheel/pip/files
printf evil >> "$(ls six-*.whl)"
cd {TAMPERED}/page/pip/files
w=$(ls six-*.whl)
printf evil >> "$w"
sed -i "s/#sha256=[0-9a-f]*/#sha256=$(sha256sum "$w" | cut -d' ' -f1)/" ../simple/six/index.html
"""
FREE_PORT = "python3 -c 'import socket; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); print(s.getsockname()[1])'"
ANSWERS = "python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1])'"


@pytest.fixture(name="tampered", scope="module")
def fixture_tampered(host: Any) -> Iterator[str]:
    _server_only(host)
    host.run_expect([0], TAMPER)
    port = host.check_output(FREE_PORT)
    host.run(f"systemctl stop {TAMPER_UNIT}")
    host.run_expect(
        [0],
        f"systemd-run --unit {TAMPER_UNIT} --property DynamicUser=yes"
        f" python3 -m http.server --bind 127.0.0.1 --directory {TAMPERED} {port}",
    )
    host.run_expect(
        [0], f"for i in $(seq 50); do {ANSWERS} http://127.0.0.1:{port}/ && exit 0; sleep 0.2; done; exit 1"
    )
    yield f"http://127.0.0.1:{port}"
    host.run(f"systemctl stop {TAMPER_UNIT}")


def _apt(host: Any, url: str, case: str) -> Any:
    state = f"/tmp/apt-{case}"
    opts = (
        f"-o Dir::Etc::SourceList={state}/sources.list -o Dir::Etc::SourceParts=/nonexistent"
        f" -o Dir::State::Lists={state}/lists -o Dir::Cache::Archives={state}/archives -o APT::Sandbox::User=root"
    )
    host.run_expect([0], f"rm -rf {state} && mkdir -p {state}/lists/partial {state}/archives/partial")
    host.run_expect([0], f"echo 'deb [signed-by={KEY}] {url}/{case}/apt ./' > {state}/sources.list")
    return host.run(f"apt-get {opts} update && apt-get {opts} install --download-only -y --no-install-recommends hello")


def _pip(host: Any, url: str, case: str, hashes: bool) -> Any:
    want = f"--require-hashes -r {MIRROR}/pip/requirements-hashes.txt" if hashes else "--no-deps six"
    return host.run(
        f"rm -rf /tmp/pip-{case} && python3 -m pip download --isolated --disable-pip-version-check --no-cache-dir"
        f" --index-url {url}/{case}/pip/simple/ -d /tmp/pip-{case} {want}"
    )


def test_untampered_copy_installs(host: Any, tampered: str) -> None:
    assert _apt(host, tampered, "good").rc == 0
    assert _pip(host, tampered, "good", hashes=True).rc == 0
    assert _pip(host, tampered, "good", hashes=False).rc == 0


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("index", "Hash Sum mismatch|File has unexpected size"),
        ("release", "BADSIG|is not signed"),
        ("forged", "NO_PUBKEY"),
        ("unsigned", "is not signed"),
        ("deb", "Hash Sum mismatch|File has unexpected size"),
    ],
)
def test_apt_refuses_a_tampered_repository(host: Any, tampered: str, case: str, expected: str) -> None:
    out = _apt(host, tampered, case)
    assert out.rc != 0, out.stdout
    assert re.search(expected, out.stdout + out.stderr), out.stdout + out.stderr
    assert not host.run(f"ls /tmp/apt-{case}/archives/hello_*.deb").stdout


def test_pip_refuses_a_wheel_that_does_not_match_its_link(host: Any, tampered: str) -> None:
    out = _pip(host, tampered, "wheel", hashes=False)
    assert out.rc != 0 and "DO NOT MATCH THE HASHES" in out.stderr, out.stderr


def test_pip_with_the_pinned_hashes_refuses_a_rewritten_index_page(host: Any, tampered: str) -> None:
    out = _pip(host, tampered, "page", hashes=True)
    assert out.rc != 0 and "DO NOT MATCH THE HASHES" in out.stderr, out.stderr
