"""Container test bed for gpulab.dlstack: a Docker engine, Debian base images, download caches.

Used by noxfile.py (molecule, demo and bench sessions) and by CI. Commands:

  testbed.py engine                 make sure a Docker engine answers (start one when we may)
  testbed.py images [DISTRO ...]    make sure the base images exist (pull, else debootstrap + import)
  testbed.py cache-snapshot FILE    record what the download caches hold
  testbed.py cache-report FILE      print what was downloaded since the snapshot (cache hits)
  testbed.py proxy                  make sure the caching package proxy (pkgcache.py) answers on 127.0.0.1
  testbed.py env                    start the proxy; print the environment variables the Molecule scenarios read

Nothing here needs a container registry: when none answers, images are built with debootstrap
from the Debian mirror this host is configured with.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

CACHE = Path(os.environ.get("DLSTACK_TESTBED_CACHE", Path.home() / ".cache" / "gpulab-dlstack"))
IMAGE_REPO = "dlstack-testbed"
# Bump when the image recipe (packages, customise_rootfs, import options) changes.
RECIPE_VERSION = "3"
PACKAGES = ["python3", "python3-apt", "sudo", "systemd", "systemd-sysv", "dbus", "ca-certificates", "procps"]
DOCKERD_ARGS = ["--bridge=none", "--iptables=false", "--ip6tables=false"]
DOCKERD_LOG = Path("/var/log/dlstack-testbed-dockerd.log")
EXTRA_CA_DIR = Path("/usr/local/share/ca-certificates")
PKGCACHE = Path(__file__).resolve().with_name("pkgcache.py")
PROXY_DIR = CACHE / "pkgcache"
PROXY_PORT = int(os.environ.get("DLSTACK_TESTBED_PROXY_PORT", "3147"))
PROXY_URL = f"http://127.0.0.1:{PROXY_PORT}"


@dataclass(frozen=True)
class Distro:
    key: str
    suite: str
    upstream_image: str


DISTROS = {
    "debian12": Distro("debian12", "bookworm", "debian:bookworm"),
    "debian13": Distro("debian13", "trixie", "debian:trixie"),
}


class TestbedError(RuntimeError):
    """A problem the user has to fix; printed as one line."""


def log(msg: str) -> None:
    print(f"testbed: {msg}", flush=True)


def run(
    cmd: list[str], *, check: bool = True, timeout: float | None = None, **kw: object
) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=check, timeout=timeout, text=True, **kw)  # type: ignore[call-overload]


def docker_answers() -> bool:
    if not shutil.which("docker"):
        return False
    try:
        return run(["docker", "info"], check=False, capture_output=True, timeout=20).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def ensure_engine() -> None:
    if docker_answers():
        log("Docker engine answers")
        return
    is_root = os.geteuid() == 0
    debian_family = Path("/etc/debian_version").exists() and shutil.which("apt-get") is not None
    if not (is_root and debian_family):
        raise TestbedError(
            "no Docker engine answers; install and start one (e.g. the docker.io package and `dockerd`), "
            "or run as root on a Debian-family host so the test bed can do it"
        )
    if not shutil.which("dockerd"):
        log("installing docker.io from the host's configured apt sources")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        run(["apt-get", "update", "-qq"], env=env)
        run(["apt-get", "install", "-y", "-qq", "docker.io"], env=env)
    log(f"starting dockerd {' '.join(DOCKERD_ARGS)} (log: {DOCKERD_LOG})")
    with DOCKERD_LOG.open("ab") as out:
        subprocess.Popen(["dockerd", *DOCKERD_ARGS], stdout=out, stderr=out, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if docker_answers():
            log("Docker engine started")
            return
        time.sleep(1)
    raise TestbedError(f"dockerd did not answer within 60 s; see {DOCKERD_LOG}")


def host_debian_mirrors(apt_dir: Path = Path("/etc/apt")) -> tuple[str, str | None]:
    """The Debian archive and security URIs this host's apt is configured with."""
    texts = []
    for path in [apt_dir / "sources.list", *sorted((apt_dir / "sources.list.d").glob("*"))]:
        if path.is_file() and path.suffix in {"", ".list", ".sources"}:
            texts.append(path.read_text(errors="replace"))
    uris = re.findall(r"^\s*(?:URIs:\s*|deb\s+(?:\[[^\]]*\]\s+)?)(\S+)", "\n".join(texts), flags=re.MULTILINE)
    archive = next((u for u in uris if u.rstrip("/").endswith("/debian")), None)
    security = next((u for u in uris if u.rstrip("/").endswith("/debian-security")), None)
    archive = os.environ.get("DLSTACK_TESTBED_MIRROR", archive)
    if not archive:
        raise TestbedError(
            "no Debian archive URI found in /etc/apt/sources.list{,.d}; "
            "set DLSTACK_TESTBED_MIRROR to a Debian mirror URL"
        )
    return archive.rstrip("/"), (security.rstrip("/") if security else None)


def extra_ca_certs() -> list[Path]:
    return sorted(EXTRA_CA_DIR.glob("*.crt")) if EXTRA_CA_DIR.is_dir() else []


def recipe_hash(distro: Distro) -> str:
    h = hashlib.sha256()
    h.update(RECIPE_VERSION.encode())
    h.update(" ".join(PACKAGES).encode())
    h.update(distro.key.encode())
    h.update(PROXY_URL.encode())
    for cert in extra_ca_certs():
        h.update(cert.read_bytes())
    return h.hexdigest()[:12]


def image_exists(ref: str) -> bool:
    return run(["docker", "image", "inspect", ref], check=False, capture_output=True).returncode == 0


def sources_file(distro: Distro, archive: str, security: str | None) -> str:
    text = (
        f"Types: deb\nURIs: {archive}\nSuites: {distro.suite} {distro.suite}-updates\n"
        "Components: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
    )
    if security:
        text += (
            f"\nTypes: deb\nURIs: {security}\nSuites: {distro.suite}-security\n"
            "Components: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
        )
    return text


def customise_rootfs(root: Path, distro: Distro, archive: str, security: str | None) -> None:
    (root / "etc/apt/sources.list").unlink(missing_ok=True)
    (root / "etc/apt/sources.list.d").mkdir(parents=True, exist_ok=True)
    (root / "etc/apt/sources.list.d/debian.sources").write_text(sources_file(distro, archive, security))
    # Units that need hardware or a real boot; masked so systemd reaches "running" in a container.
    mask = root / "etc/systemd/system"
    mask.mkdir(parents=True, exist_ok=True)
    for unit in [
        "systemd-udevd.service",
        "systemd-remount-fs.service",
        "getty.target",
        "console-getty.service",
        "systemd-logind.service",
        "sys-kernel-config.mount",
        "sys-kernel-debug.mount",
    ]:
        link = mask / unit
        if not link.exists() and not link.is_symlink():
            link.symlink_to("/dev/null")
    for cert in extra_ca_certs():
        shutil.copy2(cert, root / "usr/local/share/ca-certificates" / cert.name)
    for rel, text in package_index_config().items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def package_index_config() -> dict[str, str]:
    """The images' package settings: pip, uv and apt (http:// sources) go through the test bed's caching proxy.

    Configuration files, not environment variables, so that they also hold under sudo (become). https://
    apt sources go direct: the proxy cannot cache what it cannot read.
    """
    banner = "# gpulab.dlstack test bed: the caching package proxy on the host (tests/testbed/pkgcache.py)\n"
    return {
        "etc/pip.conf": f"{banner}[global]\nindex-url = {PROXY_URL}/simple/\n",
        "etc/uv/uv.toml": f'{banner}[[index]]\nurl = "{PROXY_URL}/simple/"\ndefault = true\n',
        "etc/apt/apt.conf.d/00dlstack-testbed-proxy": (
            f'{banner}Acquire::http::Proxy "{PROXY_URL}/";\nAcquire::https::Proxy "DIRECT";\n'
        ),
    }


def build_with_debootstrap(distro: Distro, ref: str) -> None:
    if not shutil.which("debootstrap"):
        if os.geteuid() == 0 and shutil.which("apt-get"):
            run(
                ["apt-get", "install", "-y", "-qq", "debootstrap"],
                env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"),
            )
        else:
            raise TestbedError("no registry answers and debootstrap is missing; install the debootstrap package")
    archive, security = host_debian_mirrors()
    work = Path(tempfile.mkdtemp(prefix=f"dlstack-{distro.key}-", dir=os.environ.get("TMPDIR", "/var/tmp")))
    root = work / "rootfs"
    debs = CACHE / "debootstrap" / distro.key
    debs.mkdir(parents=True, exist_ok=True)
    try:
        log(f"building {ref} with debootstrap ({distro.suite}, minbase) from {archive}")
        # Seed the package cache so a rebuild downloads nothing it already has.
        (root / "var/cache/apt/archives").mkdir(parents=True)
        for deb in debs.glob("*.deb"):
            os.link(deb, root / "var/cache/apt/archives" / deb.name)
        run(
            ["debootstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}", distro.suite, str(root), archive],
            stdout=subprocess.DEVNULL,
        )
        for deb in (root / "var/cache/apt/archives").glob("*.deb"):
            if not (debs / deb.name).exists():
                shutil.copy2(deb, debs / deb.name)
            deb.unlink()
        customise_rootfs(root, distro, archive, security)
        if extra_ca_certs():
            run(["chroot", str(root), "update-ca-certificates"], stdout=subprocess.DEVNULL)
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        run(
            [
                "docker",
                "import",
                "--change",
                'CMD ["/lib/systemd/systemd"]',
                "--change",
                "ENV container=docker",
                "-",
                ref,
            ],
            stdin=tar.stdout,
            stdout=subprocess.DEVNULL,
        )
        if tar.wait() != 0:
            raise TestbedError(f"tar of {root} failed")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def build_from_registry(distro: Distro, ref: str) -> bool:
    try:
        pulled = run(["docker", "pull", "-q", distro.upstream_image], check=False, capture_output=True, timeout=30)
    except subprocess.TimeoutExpired:
        return False
    if pulled.returncode != 0:
        return False
    log(f"building {ref} from {distro.upstream_image}")
    config = "".join(
        f"RUN mkdir -p /{Path(rel).parent} && echo {base64.b64encode(text.encode()).decode()} | base64 -d > /{rel}\n"
        for rel, text in package_index_config().items()
    )
    dockerfile = (
        f"FROM {distro.upstream_image}\n"
        "RUN rm -f /etc/apt/apt.conf.d/docker-clean && apt-get update -qq && "
        f"DEBIAN_FRONTEND=noninteractive apt-get install -y -qq {' '.join(PACKAGES)} && rm -rf /var/lib/apt/lists/*\n"
        f'{config}ENV container=docker\nCMD ["/lib/systemd/systemd"]\n'
    )
    run(["docker", "build", "-q", "-t", ref, "-"], input=dockerfile, stdout=subprocess.DEVNULL)
    return True


def ensure_image(key: str) -> str:
    if key not in DISTROS:
        raise TestbedError(f"unknown distro {key!r}; choose from {', '.join(DISTROS)}")
    distro = DISTROS[key]
    ref = f"{IMAGE_REPO}/{distro.key}:{recipe_hash(distro)}"
    latest = f"{IMAGE_REPO}/{distro.key}:latest"
    started = time.monotonic()
    if image_exists(ref):
        log(f"{ref} cached")
    elif not build_from_registry(distro, ref):
        build_with_debootstrap(distro, ref)
        log(f"{ref} built in {time.monotonic() - started:.0f} s")
    run(["docker", "tag", ref, latest])
    return latest


def cache_dirs() -> dict[str, Path]:
    dirs = {
        "pip-wheels-built": CACHE / "pip",
        "pip-proxy": PROXY_DIR / "pip-files",
        "apt-proxy": PROXY_DIR / "apt",
    }
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    return dirs


def snapshot() -> dict[str, dict[str, int]]:
    result: dict[str, dict[str, int]] = {}
    for name, path in cache_dirs().items():
        files = {}
        for f in path.rglob("*"):
            if f.is_file() and "partial" not in f.parts and f.name != "lock" and not f.name.startswith(".part-"):
                files[str(f.relative_to(path))] = f.stat().st_size
        result[name] = files
    log_file = PROXY_DIR / "access.jsonl"
    result["proxy-log"] = {"offset": log_file.stat().st_size if log_file.exists() else 0}
    return result


def proxy_summary(offset: int) -> list[str]:
    """What the package proxy served since offset of its access log: from the cache versus fetched upstream."""
    log_file = PROXY_DIR / "access.jsonl"
    if not log_file.exists():
        return []
    counts: dict[tuple[str, bool], list[int]] = {}
    with log_file.open() as src:
        src.seek(offset)
        for line in src:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            slot = counts.setdefault((entry["kind"], bool(entry["hit"])), [0, 0])
            slot[0] += 1
            slot[1] += int(entry["bytes"])
    lines = []
    for kind in ("pip-file", "pip-index", "apt", "apt-index"):
        hit, miss = counts.get((kind, True), [0, 0]), counts.get((kind, False), [0, 0])
        if hit[0] or miss[0]:
            lines.append(
                f"proxy {kind}: served from the host cache {hit[0]} ({hit[1] / 2**20:.1f} MiB); "
                f"downloaded {miss[0]} ({miss[1] / 2**20:.1f} MiB)"
            )
    return lines


def cache_report(before_file: Path) -> None:
    before = json.loads(before_file.read_text())
    after = snapshot()
    for name, files in after.items():
        if name == "proxy-log":
            continue
        old = before.get(name, {})
        new = {k: v for k, v in files.items() if k not in old}
        reused = sum(1 for k in files if k in old)
        log(
            f"cache {name}: {len(files)} files ({sum(files.values()) / 2**20:.1f} MiB); "
            f"added this run: {len(new)} files ({sum(new.values()) / 2**20:.1f} MiB); "
            f"already there before the run: {reused}"
        )
    for line in proxy_summary(before.get("proxy-log", {}).get("offset", 0)):
        log(line)


def pip_upstream() -> str:
    """The index the proxy fetches from: DLSTACK_TESTBED_PIP_UPSTREAM, the host's pip setting, or pip's default."""
    if os.environ.get("DLSTACK_TESTBED_PIP_UPSTREAM"):
        return os.environ["DLSTACK_TESTBED_PIP_UPSTREAM"]
    if os.environ.get("PIP_INDEX_URL") and not os.environ["PIP_INDEX_URL"].startswith(PROXY_URL):
        return os.environ["PIP_INDEX_URL"]
    listed = run([sys.executable, "-m", "pip", "config", "list"], check=False, capture_output=True)
    for line in listed.stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.endswith(".index-url") and value.strip("'\"").startswith("http"):
            return value.strip("'\"")
    default = run(
        [sys.executable, "-c", "from pip._internal.models.index import PyPI; print(PyPI.simple_url)"],
        check=False,
        capture_output=True,
    )
    if default.returncode != 0 or not default.stdout.strip():
        raise TestbedError("cannot tell which pip index to proxy; set DLSTACK_TESTBED_PIP_UPSTREAM to its URL")
    return default.stdout.strip()


def proxy_version() -> str | None:
    try:
        with urllib.request.urlopen(f"{PROXY_URL}/-/health", timeout=5) as resp:
            return resp.read().decode().strip()
    except (urllib.error.URLError, OSError):
        return None


def ensure_proxy() -> None:
    """Start pkgcache.py in the background unless the same version already answers on PROXY_PORT."""
    wanted = hashlib.sha256(PKGCACHE.read_bytes()).hexdigest()[:12]
    answering = proxy_version()
    if answering == wanted:
        log(f"package proxy answers on {PROXY_URL} (cache {PROXY_DIR})")
        return
    PROXY_DIR.mkdir(parents=True, exist_ok=True)
    pid_file = PROXY_DIR / "server.pid"
    if answering is not None and pid_file.exists():
        log(f"restarting the package proxy (version {answering} -> {wanted})")
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid_file.read_text()), 15)
        time.sleep(1)
    upstream = pip_upstream()
    with (PROXY_DIR / "server.log").open("ab") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                str(PKGCACHE),
                "--root",
                str(PROXY_DIR),
                "--port",
                str(PROXY_PORT),
                "--upstream",
                upstream,
            ],
            stdout=out,
            stderr=out,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    pid_file.write_text(str(proc.pid))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proxy_version() == wanted:
            log(f"package proxy started on {PROXY_URL} (cache {PROXY_DIR}, log {PROXY_DIR / 'server.log'})")
            return
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    raise TestbedError(
        f"the package proxy did not answer on {PROXY_URL}; see {PROXY_DIR / 'server.log'} "
        "(another program on that port? set DLSTACK_TESTBED_PROXY_PORT)"
    )


def print_env() -> None:
    cache_dirs()
    ensure_proxy()
    print(f"export DLSTACK_TESTBED_CACHE={CACHE}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("engine")
    img = sub.add_parser("images")
    img.add_argument("distros", nargs="*", default=list(DISTROS))
    for name in ("cache-snapshot", "cache-report"):
        sub.add_parser(name).add_argument("file", type=Path)
    sub.add_parser("proxy")
    sub.add_parser("env")
    args = parser.parse_args(argv)
    try:
        if args.cmd == "engine":
            ensure_engine()
        elif args.cmd == "images":
            ensure_engine()
            for key in args.distros:
                ensure_image(key)
        elif args.cmd == "cache-snapshot":
            args.file.write_text(json.dumps(snapshot()))
        elif args.cmd == "cache-report":
            cache_report(args.file)
        elif args.cmd == "proxy":
            ensure_proxy()
        elif args.cmd == "env":
            print_env()
    except (TestbedError, subprocess.CalledProcessError) as exc:
        print(f"testbed: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
