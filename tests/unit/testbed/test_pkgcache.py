"""The test bed's caching package proxy, against a local upstream served over real HTTP."""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

_SPEC = importlib.util.spec_from_file_location("pkgcache", Path(__file__).parents[2] / "testbed" / "pkgcache.py")
assert _SPEC and _SPEC.loader
pkgcache = importlib.util.module_from_spec(_SPEC)
sys.modules["pkgcache"] = pkgcache
_SPEC.loader.exec_module(pkgcache)

WHEEL = b"PK\x03\x04 not really a wheel, but bytes to count" * 1000


class Upstream(BaseHTTPRequestHandler):
    """A minimal index plus a file host and an apt archive, counting what it serves."""

    hits: ClassVar[list[str]] = []
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        Upstream.hits.append(self.path)
        host = self.headers["Host"]
        pages = {
            "/simple/demo-pkg/": (
                f'<a href="http://{host}/packages/aa/demo_pkg-1.0-py3-none-any.whl#sha256=abc" '
                'data-requires-python="&gt;=3.9">demo_pkg-1.0-py3-none-any.whl</a>'
                '<a href="../../packages/bb/demo-pkg-1.0.tar.gz">demo-pkg-1.0.tar.gz</a>'
            ).encode(),
            "/packages/aa/demo_pkg-1.0-py3-none-any.whl": WHEEL,
            "/debian/pool/main/d/demo/demo_1.0_all.deb": b"!<arch>\n" + WHEEL,
            "/debian/dists/bookworm/InRelease": b"Origin: Debian\n",
            "/debian/README": b"Debian archive\n",
        }
        body = pages.get(self.path)
        if body is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html" if self.path.startswith("/simple/") else "application/x-data")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _serve(server: ThreadingHTTPServer) -> None:
    threading.Thread(target=server.serve_forever, daemon=True).start()


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[tuple[str, str, Path]]:
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    _serve(upstream)
    up_url = f"http://127.0.0.1:{upstream.server_address[1]}"
    pkgcache.Handler.proxy = pkgcache.Proxy(tmp_path, f"{up_url}/simple", 3600, None)
    server = ThreadingHTTPServer(("127.0.0.1", 0), pkgcache.Handler)
    _serve(server)
    Upstream.hits = []
    yield f"http://127.0.0.1:{server.server_address[1]}", up_url, tmp_path
    server.shutdown()
    upstream.shutdown()


def _get(url: str, proxy: str | None = None) -> bytes:
    handlers = [urllib.request.ProxyHandler({"http": proxy} if proxy else {})]
    with urllib.request.build_opener(*handlers).open(url, timeout=10) as resp:
        return resp.read()


def _log(root: Path, entries: int) -> list[dict[str, object]]:
    """The proxy's access log once it holds `entries` lines (it writes a line after the response is sent)."""
    deadline = time.monotonic() + 5
    while True:
        lines = (root / "access.jsonl").read_text().splitlines()
        if len(lines) >= entries or time.monotonic() > deadline:
            return [json.loads(line) for line in lines]
        time.sleep(0.05)


def test_index_links_point_at_the_proxy_and_files_are_fetched_once(proxy: tuple[str, str, Path]) -> None:
    base, up_url, root = proxy
    page = _get(f"{base}/simple/Demo_Pkg/").decode()
    host = up_url.split("//")[1]
    assert f'href="/files/http/{host}/packages/aa/demo_pkg-1.0-py3-none-any.whl#sha256=abc"' in page
    assert f'href="/files/http/{host}/packages/bb/demo-pkg-1.0.tar.gz"' in page
    assert 'data-requires-python="&gt;=3.9"' in page
    wheel = f"{base}/files/http/{host}/packages/aa/demo_pkg-1.0-py3-none-any.whl"
    assert _get(wheel) == WHEEL
    assert _get(wheel) == WHEEL
    _get(f"{base}/simple/demo-pkg/")
    assert Upstream.hits == ["/simple/demo-pkg/", "/packages/aa/demo_pkg-1.0-py3-none-any.whl"]
    kinds = [(e["kind"], e["hit"]) for e in _log(root, 4)]
    assert kinds == [("pip-index", False), ("pip-file", False), ("pip-file", True), ("pip-index", True)]


def test_a_missing_project_or_file_is_a_404_and_nothing_is_cached(proxy: tuple[str, str, Path]) -> None:
    base, up_url, root = proxy
    host = up_url.split("//")[1]
    for url in (f"{base}/simple/absent/", f"{base}/files/http/{host}/packages/zz/absent.whl"):
        with pytest.raises(urllib.error.HTTPError) as err:
            _get(url)
        assert err.value.code == 404
    assert not any((root / "pip-files").rglob("*.whl"))


def test_malformed_file_paths_are_refused(proxy: tuple[str, str, Path]) -> None:
    base = proxy[0]
    with pytest.raises(urllib.error.HTTPError) as err:
        _get(f"{base}/files/ftp/example/x.whl")
    assert err.value.code == 400
    assert pkgcache.file_url("/files/https/host/a/../../etc/passwd") is None


def test_apt_pool_and_release_files_are_kept_and_the_rest_passes_through(proxy: tuple[str, str, Path]) -> None:
    base, up_url, root = proxy
    deb = f"{up_url}/debian/pool/main/d/demo/demo_1.0_all.deb"
    release = f"{up_url}/debian/dists/bookworm/InRelease"
    for attempt in range(2):
        assert _get(deb, proxy=base).startswith(b"!<arch>"), attempt
        assert _get(release, proxy=base) == b"Origin: Debian\n"
        assert _get(f"{up_url}/debian/README", proxy=base) == b"Debian archive\n"
    assert Upstream.hits.count("/debian/pool/main/d/demo/demo_1.0_all.deb") == 1
    assert Upstream.hits.count("/debian/dists/bookworm/InRelease") == 1
    assert Upstream.hits.count("/debian/README") == 2
    kinds = [(e["kind"], e["hit"]) for e in _log(root, 6)]
    assert kinds.count(("apt", False)) == 1 and kinds.count(("apt", True)) == 1
    assert kinds.count(("apt-index", False)) == 1 + 2 and kinds.count(("apt-index", True)) == 1


def test_release_files_are_refreshed_after_their_ttl(proxy: tuple[str, str, Path]) -> None:
    base, up_url = proxy[0], proxy[1]
    pkgcache.Handler.proxy.apt_index_ttl = 0
    release = f"{up_url}/debian/dists/bookworm/InRelease"
    _get(release, proxy=base)
    _get(release, proxy=base)
    assert Upstream.hits.count("/debian/dists/bookworm/InRelease") == 2


def test_stale_index_is_served_when_the_upstream_is_gone(tmp_path: Path) -> None:
    pkgcache.Handler.proxy = pkgcache.Proxy(tmp_path, "http://127.0.0.1:9/simple", 0, None)
    (tmp_path / "pip-index" / "demo-pkg.html").write_text("<a href='/files/http/h/x.whl'>x</a>")
    server = ThreadingHTTPServer(("127.0.0.1", 0), pkgcache.Handler)
    _serve(server)
    try:
        assert b"x.whl" in _get(f"http://127.0.0.1:{server.server_address[1]}/simple/demo-pkg/")
    finally:
        server.shutdown()


def test_normalize_follows_pep_503() -> None:
    assert pkgcache.normalize("Foo.Bar__baz") == "foo-bar-baz"
