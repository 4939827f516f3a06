"""A caching package proxy for the test bed's containers: a pip index and an apt HTTP proxy on 127.0.0.1.

Why: the Python package index this project is tested against answers without any caching headers, so
pip's own HTTP cache stores nothing and every scenario downloaded every wheel again. This proxy keeps
what it fetched on the host, so a second run downloads none of it.

- pip: `PIP_INDEX_URL=http://127.0.0.1:PORT/simple/`. Index pages are fetched from the upstream index (the
  host's pip configuration, or pip's default) and kept for DLSTACK_TESTBED_INDEX_TTL seconds (default one
  day; a stale page is served when the upstream does not answer); their file links are rewritten to
  /files/<scheme>/<host>/<path>, and each file is fetched once and then served from the cache.
- apt: `Acquire::http::Proxy "http://127.0.0.1:PORT/";` for http sources. Package files (pool/) and
  by-hash index files are immutable and kept; the rest of dists/ (InRelease, Release) is kept for
  DLSTACK_TESTBED_APT_INDEX_TTL seconds (default six hours; stale when the upstream does not answer);
  anything else passes through.

Every request is logged to access.jsonl (kind, hit, bytes) so the test bed can print the cache hits.
Only the standard library is used; testbed.py starts it (`testbed.py proxy`).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shutil
import ssl
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import BinaryIO

VERSION = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
CHUNK = 1 << 20
HREF = re.compile(r'href="([^"]+)"')
IMMUTABLE_APT = re.compile(r"/(pool|by-hash)/")
HOP_HEADERS = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "trailer"}


def normalize(name: str) -> str:
    """PEP 503 project name normalisation."""
    return re.sub(r"[-_.]+", "-", name).lower()


def rewrite_links(html: str, page_url: str) -> str:
    """Point every file link of a PEP 503 page at this proxy's /files/ path (fragments such as #sha256= kept)."""

    def repl(match: re.Match[str]) -> str:
        target = urllib.parse.urljoin(page_url, match.group(1).replace("&amp;", "&"))
        parts = urllib.parse.urlsplit(target)
        if parts.scheme not in ("http", "https"):
            return match.group(0)
        local = f"/files/{parts.scheme}/{parts.netloc}{parts.path}"
        if parts.query:
            local += "?" + parts.query
        if parts.fragment:
            local += "#" + parts.fragment
        return f'href="{local}"'

    return HREF.sub(repl, html)


def file_url(path: str) -> str | None:
    """The upstream URL behind a /files/<scheme>/<host>/<path> request, or None for a malformed one."""
    parts = path.split("/", 4)
    if len(parts) < 5 or parts[2] not in ("http", "https") or not parts[3] or ".." in parts[4].split("/"):
        return None
    return f"{parts[2]}://{parts[3]}/{parts[4]}"


def cache_path(root: Path, url: str) -> Path:
    parts = urllib.parse.urlsplit(url)
    rel = parts.path.lstrip("/")
    if parts.query:
        rel += "?" + hashlib.sha256(parts.query.encode()).hexdigest()[:16]
    if not rel or rel.endswith("/") or ".." in rel.split("/"):
        rel = rel.rstrip("/") + "/.index-" + hashlib.sha256(url.encode()).hexdigest()[:16]
    return root / parts.netloc / rel


class Proxy:
    def __init__(
        self, root: Path, upstream: str, index_ttl: float, cafile: str | None, apt_index_ttl: float = 21600
    ) -> None:
        self.root = root
        self.upstream = upstream.rstrip("/") + "/"
        self.index_ttl = index_ttl
        self.apt_index_ttl = apt_index_ttl
        self.ssl = ssl.create_default_context(cafile=cafile) if cafile else ssl.create_default_context()
        self.log_lock = threading.Lock()
        (root / "pip-files").mkdir(parents=True, exist_ok=True)
        (root / "pip-index").mkdir(parents=True, exist_ok=True)
        (root / "apt").mkdir(parents=True, exist_ok=True)
        (root / "apt-dists").mkdir(parents=True, exist_ok=True)

    def record(self, kind: str, hit: bool, size: int, what: str) -> None:
        line = json.dumps({"t": round(time.time(), 1), "kind": kind, "hit": hit, "bytes": size, "what": what})
        with self.log_lock, (self.root / "access.jsonl").open("a") as out:
            out.write(line + "\n")

    def open_upstream(self, url: str, headers: dict[str, str] | None = None):
        request = urllib.request.Request(url, headers={"User-Agent": f"dlstack-testbed-pkgcache/{VERSION}"})
        for key, value in (headers or {}).items():
            request.add_header(key, value)
        return urllib.request.urlopen(request, timeout=60, context=self.ssl)


def send_file(handler: BaseHTTPRequestHandler, path: Path, content_type: str) -> int:
    size = path.stat().st_size
    handler.send_response(200)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(size))
    handler.end_headers()
    if handler.command != "HEAD":
        with path.open("rb") as src:
            shutil.copyfileobj(src, handler.wfile, CHUNK)
    return size


def stream_and_store(handler: BaseHTTPRequestHandler, upstream: BinaryIO, headers: dict[str, str], dest: Path) -> int:
    """Send an upstream response to the client while writing it to dest (renamed into place when complete)."""
    handler.send_response(200)
    for key, value in headers.items():
        if key.lower() not in HOP_HEADERS:
            handler.send_header(key, value)
    handler.end_headers()
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=".part-")
    size = 0
    client_ok = True
    try:
        with os.fdopen(fd, "wb") as out:
            while chunk := upstream.read(CHUNK):
                out.write(chunk)
                size += len(chunk)
                if client_ok:
                    try:
                        handler.wfile.write(chunk)
                    except OSError:
                        client_ok = False  # keep filling the cache; the client will retry
        expected = headers.get("Content-Length")
        if expected is not None and int(expected) != size:
            raise OSError(f"short read: {size} of {expected} bytes")
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return size


class Handler(BaseHTTPRequestHandler):
    proxy: Proxy
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        sys.stderr.write(f"{self.log_date_time_string()} {format % args}\n")

    def fail(self, code: int, message: str) -> None:
        body = (message + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        try:
            if self.path.startswith("http://"):
                self.apt()
            elif self.path == "/-/health":
                body = VERSION.encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            elif self.path.startswith("/simple/"):
                self.index()
            elif self.path.startswith("/files/"):
                self.file()
            else:
                self.fail(404, f"unknown path {self.path}")
        except (urllib.error.URLError, OSError) as exc:
            with contextlib.suppress(OSError):  # the client may be gone already
                self.fail(502, f"upstream error for {self.path}: {exc}")

    def index(self) -> None:
        name = self.path[len("/simple/") :].strip("/").split("/")[0]
        if not name:
            self.fail(404, "the project list is not proxied; ask for /simple/<project>/")
            return
        project = normalize(name)
        self.kept(
            f"{self.proxy.upstream}{project}/",
            self.proxy.root / "pip-index" / f"{project}.html",
            self.proxy.index_ttl,
            kind="pip-index",
            what=project,
            content_type="text/html; charset=utf-8",
            headers={"Accept": "text/html"},
            transform=lambda body, url: rewrite_links(body.decode("utf-8"), url).encode("utf-8"),
            missing=f"{project} is not on the upstream index",
        )

    def file(self) -> None:
        url = file_url(self.path.split("#")[0])
        if url is None:
            self.fail(400, f"malformed file path {self.path}")
            return
        self.cached(url, self.proxy.root / "pip-files", "pip-file", "application/octet-stream")

    def apt(self) -> None:
        url = self.path
        path = urllib.parse.urlsplit(url).path
        if IMMUTABLE_APT.search(path):
            self.cached(url, self.proxy.root / "apt", "apt", "application/octet-stream")
            return
        if "/dists/" in path:
            # InRelease and friends: kept for a while, so a re-run within it asks the mirror nothing.
            dest = cache_path(self.proxy.root / "apt-dists", url)
            ttl = self.proxy.apt_index_ttl
            self.kept(url, dest, ttl, kind="apt-index", what=path, content_type="application/octet-stream")
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() in ("if-modified-since", "range", "accept")}
        try:
            resp = self.proxy.open_upstream(url, headers)
        except urllib.error.HTTPError as exc:
            self.send_response(exc.code)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with resp:
            body = resp.read()
            self.send_response(resp.status)
            for key, value in resp.headers.items():
                if key.lower() not in HOP_HEADERS and key.lower() != "content-length":
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
        self.proxy.record("apt-index", False, len(body), urllib.parse.urlsplit(url).path)

    def kept(
        self,
        url: str,
        dest: Path,
        ttl: float,
        *,
        kind: str,
        what: str,
        content_type: str,
        headers: dict[str, str] | None = None,
        transform: Callable[[bytes, str], bytes] | None = None,
        missing: str | None = None,
    ) -> None:
        """Serve dest, a copy of url kept for ttl seconds: refreshed after, served stale when the upstream fails."""
        fresh = dest.is_file() and time.time() - dest.stat().st_mtime < ttl
        if not fresh:
            try:
                with self.proxy.open_upstream(url, headers) as resp:
                    body = resp.read()
                    if transform is not None:
                        body = transform(body, resp.geturl())
                dest.parent.mkdir(parents=True, exist_ok=True)
                tmp = dest.with_name(f".part-{threading.get_ident()}")
                tmp.write_bytes(body)
                os.replace(tmp, dest)
            except urllib.error.HTTPError as exc:
                if exc.code == 404 or not dest.is_file():
                    self.fail(exc.code, (exc.code == 404 and missing) or f"upstream answered {exc.code} for {url}")
                    return
            except (urllib.error.URLError, OSError):
                if not dest.is_file():
                    raise
        self.proxy.record(kind, fresh, send_file(self, dest, content_type), what)

    def cached(self, url: str, root: Path, kind: str, content_type: str) -> None:
        dest = cache_path(root, url)
        what = urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1]
        if dest.is_file():
            self.proxy.record(kind, True, send_file(self, dest, content_type), what)
            return
        try:
            resp = self.proxy.open_upstream(url)
        except urllib.error.HTTPError as exc:
            self.fail(exc.code, f"upstream answered {exc.code} for {url}")
            return
        with resp:
            headers = {"Content-Type": resp.headers.get("Content-Type", content_type)}
            if resp.headers.get("Content-Length"):
                headers["Content-Length"] = resp.headers["Content-Length"]
            size = stream_and_store(self, resp, headers, dest)
        self.proxy.record(kind, False, size, what)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, required=True, help="cache directory")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True, help="the upstream pip index (simple API) URL")
    parser.add_argument("--index-ttl", type=float, default=float(os.environ.get("DLSTACK_TESTBED_INDEX_TTL", "86400")))
    parser.add_argument(
        "--apt-index-ttl", type=float, default=float(os.environ.get("DLSTACK_TESTBED_APT_INDEX_TTL", "21600"))
    )
    parser.add_argument("--cafile", default=os.environ.get("PIP_CERT") or os.environ.get("SSL_CERT_FILE"))
    args = parser.parse_args(argv)
    Handler.proxy = Proxy(args.root, args.upstream, args.index_ttl, args.cafile, args.apt_index_ttl)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(f"pkgcache {VERSION} serving on 127.0.0.1:{args.port}, cache {args.root}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
