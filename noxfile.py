"""Developer entry points for gpulab.dlstack; the same commands run on a laptop and in CI.

`nox` runs lint, sanity, units, backends and molecule. `nox -s demo` provisions a throwaway container
and prints its verification report. See README.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
REQUIREMENTS = str(ROOT / "requirements-dev.txt")
TESTBED = str(ROOT / "tests" / "testbed" / "testbed.py")
CACHE = Path(os.environ.get("DLSTACK_TESTBED_CACHE", Path.home() / ".cache" / "gpulab-dlstack"))
# Scenarios run by `nox`; gpu runs only where a GPU and the NVIDIA container runtime exist, else it is skipped.
MOLECULE_SCENARIOS = ["default", "nvidia", "cuda_distro", "tfbuild", "fleet", "mirror", "gpu"]
PYTHON_DIRS = ["plugins", "tests", "noxfile.py"]

# One virtual environment with the pinned tools, shared by every session (installing Ansible
# once instead of once per session saves minutes in CI).
TOOLS = ROOT / ".nox" / "_tools"

nox.options.sessions = ["lint", "sanity", "units", "conda", "backends", "molecule"]


def _install(session: nox.Session) -> None:
    """Create or refresh the shared tools environment and put it first on PATH."""
    digest = hashlib.sha256(Path(REQUIREMENTS).read_bytes()).hexdigest()
    stamp = TOOLS / "requirements.sha256"
    if not stamp.exists() or stamp.read_text() != digest:
        session.run(sys.executable, "-m", "venv", "--clear", str(TOOLS))
        session.run(str(TOOLS / "bin" / "python"), "-m", "pip", "install", "-q", "-r", REQUIREMENTS)
        stamp.write_text(digest)
    session.env["PATH"] = f"{TOOLS / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    session.env["VIRTUAL_ENV"] = str(TOOLS)


def _tool(name: str) -> str:
    return str(TOOLS / "bin" / name)


def _testbed_env() -> dict[str, str]:
    return {
        "PATH": f"{TOOLS / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "DLSTACK_TESTBED_CACHE": str(CACHE),
        "ANSIBLE_COLLECTIONS_PATH": str(ROOT / "collections"),
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "PY_COLORS": "0",
        "ANSIBLE_FORCE_COLOR": "0",
    }


def _tracked_files() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [f for f in out.split("\0") if f and (ROOT / f).exists()]


@nox.session(venv_backend="none")
def lint(session: nox.Session) -> None:
    """ansible-lint (production profile), yamllint, ruff and mypy."""
    _install(session)
    session.run(_tool("python"), str(ROOT / "tests" / "docs" / "role_docs.py"), "--check")
    session.run(_tool("yamllint"), "--strict", ".")
    session.run(_tool("ruff"), "check", *PYTHON_DIRS)
    session.run(_tool("ruff"), "format", "--check", *PYTHON_DIRS)
    session.run(_tool("mypy"), "plugins/", "tests/testbed/", "noxfile.py")
    # ansible-lint installs this collection into .ansible/; a copy left from an earlier run would be linted instead.
    shutil.rmtree(ROOT / ".ansible", ignore_errors=True)
    session.run(_tool("ansible-lint"), "--offline", "--profile", "production", env=_testbed_env())
    _lint_collection_docs(session)
    _galaxy_importer(session)


def _lint_collection_docs(session: nox.Session) -> None:
    """antsibull-docs's check of every plugin, module and role argument spec, as the docs site build reads them."""
    with session.chdir(ROOT / "collections" / "ansible_collections" / "gpulab" / "dlstack"):
        session.run(_tool("antsibull-docs"), "lint-collection-docs", "--plugin-docs", ".", env=_testbed_env())


def _galaxy_importer(session: nox.Session) -> None:
    """Galaxy's importer on the built tarball, offline: ansible-test off, and its ansible-lint pass off too (the
    lint session's own ansible-lint run above is stricter: production profile, and it fails on findings)."""
    work = Path(tempfile.mkdtemp(prefix="dlstack-importer-"))
    try:
        session.run(_tool("ansible-galaxy"), "collection", "build", "--output-path", str(work), str(ROOT), silent=True)
        (tarball,) = work.glob("gpulab-dlstack-*.tar.gz")
        config = work / "galaxy-importer.cfg"
        config.write_text(
            "[galaxy-importer]\n"
            "run_ansible_test = False\n"
            "run_ansible_lint = False\n"
            "check_changelog = True\n"
            f"tmp_root_dir = {work}\n"
        )
        env = {**_testbed_env(), "GALAXY_IMPORTER_CONFIG": str(config)}
        with session.chdir(work):  # the importer writes importer_result.json into the working directory
            output = session.run(_tool("python"), "-m", "galaxy_importer.main", str(tarball), env=env, silent=True)
        # The importer exits 0 on warnings; anything it flags fails the session here.
        flagged = [
            line for line in str(output).splitlines() if re.search(r"\b(WARNING|ERROR)\b", line, flags=re.IGNORECASE)
        ]
        if flagged or "Importer processing completed successfully" not in str(output):
            session.error("galaxy-importer flagged the collection:\n" + str(output))
        session.log("galaxy-importer: the built collection imports with no warnings")
    finally:
        shutil.rmtree(work, ignore_errors=True)


@nox.session(venv_backend="none")
def sanity(session: nox.Session) -> None:
    """ansible-test sanity on a temporary ansible_collections/gpulab/dlstack copy."""
    _install(session)
    work = Path(tempfile.mkdtemp(prefix="dlstack-sanity-"))
    dest = work / "ansible_collections" / "gpulab" / "dlstack"
    for rel in _tracked_files():
        if rel.startswith("collections/"):
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, target, follow_symlinks=False)
    _seed_get_pip(session)
    args = [
        _tool("ansible-test"),
        "sanity",
        "--local",
        "--python",
        f"{sys.version_info.major}.{sys.version_info.minor}",
        "--requirements",
        "--color",
        "no",
    ]
    try:
        with session.chdir(dest):
            session.run(*args, *session.posargs, env={"ANSIBLE_COLLECTIONS_PATH": str(work)})
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _seed_get_pip(session: nox.Session) -> None:
    """ansible-test fetches a pip bootstrap script from a URL; stand in for it with ensurepip."""
    source = session.run(
        _tool("python"),
        "-c",
        "import ansible_test, pathlib; print(pathlib.Path(ansible_test.__file__).parent)",
        silent=True,
    )
    assert isinstance(source, str)
    text = (Path(source.strip()) / "_internal" / "python_requirements.py").read_text()
    match = re.search(r"pip='([0-9.]+)'", text)
    if match is None:
        raise RuntimeError("cannot find the pip version ansible-test bootstraps; update _seed_get_pip in noxfile.py")
    cache = Path.home() / ".ansible" / "test" / "cache" / f"get_pip_{match.group(1).replace('.', '_')}.py"
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(
        "# Offline stand-in for get-pip.py, written by gpulab.dlstack's noxfile.\n"
        "import subprocess, sys\n"
        "args = [a for a in sys.argv[1:] if a not in ('--no-setuptools', '--no-wheel')]\n"
        "subprocess.check_call([sys.executable, '-m', 'ensurepip', '--upgrade'])\n"
        "subprocess.check_call([sys.executable, '-m', 'pip', 'install', *args])\n"
    )


@nox.session(venv_backend="none")
def units(session: nox.Session) -> None:
    """pytest on tests/unit with coverage of plugins/."""
    _install(session)
    session.run(
        _tool("pytest"), "tests/unit", "--cov=plugins", "--cov-report=term-missing:skip-covered", *session.posargs
    )


@nox.session(venv_backend="none")
def conda(session: nox.Session) -> None:
    """python_env's conda backend on this machine (tests/conda/run.sh): a throwaway prefix, installers served over
    HTTP from 127.0.0.1, the conda client a stub (no channel is reachable here); needs no root."""
    _install(session)
    env = {**_testbed_env(), "ANSIBLE_PLAYBOOK": _tool("ansible-playbook")}
    env.pop("ANSIBLE_CONFIG")
    session.run("bash", str(ROOT / "tests" / "conda" / "run.sh"), *session.posargs, env=env, external=True)


@nox.session(venv_backend="none")
@nox.parametrize("scenario", MOLECULE_SCENARIOS)
def molecule(session: nox.Session, scenario: str) -> None:
    """One Molecule scenario in containers on the local test bed; prints the download-cache hits."""
    if scenario == "gpu":
        reason = _gpu_skip_reason()
        if reason:
            session.skip(f"gpu scenario skipped: {reason}")
    _install(session)
    env = _testbed_env()
    _testbed_up(session)
    snapshot = Path(session.create_tmp()) / f"cache-{scenario}.json"
    session.run(_tool("python"), TESTBED, "cache-snapshot", str(snapshot), env=env)
    try:
        session.run(_tool("molecule"), "test", "-s", scenario, *session.posargs, env=env)
    finally:
        session.run(_tool("python"), TESTBED, "cache-report", str(snapshot), env=env)


def _testbed_up(session: nox.Session, *distros: str) -> None:
    """Base images (all distros when none is named) and the caching package proxy the containers use."""
    session.run(_tool("python"), TESTBED, "images", *distros, env=_testbed_env())
    session.run(_tool("python"), TESTBED, "proxy", env=_testbed_env())


def _gpu_skip_reason() -> str | None:
    """Why the gpu scenario cannot run here, or None when a GPU and Docker's NVIDIA runtime are present."""
    try:
        smi = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False, timeout=60)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return "nvidia-smi is missing or does not answer: no usable NVIDIA GPU on this machine"
    if smi.returncode != 0 or "GPU 0" not in smi.stdout:
        return f"nvidia-smi -L found no GPU ({(smi.stdout + smi.stderr).strip()[:200]})"
    info = subprocess.run(
        ["docker", "info", "--format", "{{json .Runtimes}}"], capture_output=True, text=True, check=False
    )
    if "nvidia" not in info.stdout and shutil.which("nvidia-container-runtime-hook") is None:
        return "Docker has no nvidia runtime: install the NVIDIA container toolkit (nvidia-ctk runtime configure)"
    return None


def _docker(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], check=check, capture_output=True, text=True)


def _start_container(name: str, distro: str) -> None:
    """A test-bed container; its apt and pip go through the host's package proxy (set in the image)."""
    _docker("rm", "-f", name, check=False)
    _docker(
        "run",
        "-d",
        "--name",
        name,
        "--hostname",
        name,
        "--network",
        "host",
        "--cap-add",
        "SYS_ADMIN",
        "--cgroupns=host",
        "-v",
        "/sys/fs/cgroup:/sys/fs/cgroup:rw",
        "--tmpfs",
        "/run",
        "--tmpfs",
        "/run/lock",
        "--tmpfs",
        "/tmp",
        f"dlstack-testbed/{distro}:latest",
    )


@nox.session(venv_backend="none")
def demo(session: nox.Session) -> None:
    """The main job: provision a throwaway Debian 12 container and print its stack and verification report.

    `nox -s demo` uses the default profile (CPU in a container). `nox -s demo -- gpu` gives the container a stand-in
    H100 on a fake PCI bus (tests/standins/) and runs the GPU profile: the whole NVIDIA stack from the sources
    reachable here, then verify, whose verdict is fail with the reason (no GPU device in a container; the
    stand-in vars set verify_fail_on: never so the report is still printed). Further arguments go to
    ansible-playbook.
    """
    gpu = session.posargs[:1] == ["gpu"]
    extra = list(session.posargs[1:] if gpu else session.posargs)
    _install(session)
    _testbed_up(session, "debian12")
    name = f"dlstack-demo-{'gpu-' if gpu else ''}{os.getpid()}"
    report_dir = ROOT / "reports" / ("demo-gpu" if gpu else "demo")
    _start_container(name, "debian12")
    try:
        if gpu:
            _ansible_playbook(session, [name], str(ROOT / "tests" / "standins" / "fake_gpu_pci.yml"))
            extra = ["-e", f"@{STANDIN_GPU_VARS}", *extra]
        started = time.monotonic()
        _ansible_playbook(session, [name], "provision.yml", "-e", f"verify_report_dir={report_dir}", *extra)
        session.log(f"provision.yml took {time.monotonic() - started:.0f} s")
        fact = _docker("exec", name, "cat", "/etc/ansible/facts.d/dlstack_stack.fact", check=False)
        if fact.returncode == 0:
            table = _stack_table(json.loads(fact.stdout), _pipeline_stages(session))
            session.log(f"installed stack ({name}):\n{table}")
        report = report_dir / "fleet.md"
        if report.exists():
            session.log(f"verification report ({report}):\n{report.read_text()}")
    finally:
        _docker("rm", "-f", name, check=False)


STANDIN_GPU_VARS = ROOT / "tests" / "standins" / "group_vars" / "dlstack_gpu_standin.yml"


def _pipeline_stages(session: nox.Session) -> list[str]:
    """The collection's one stage list, read the way the playbooks read it (lookup gpulab.dlstack.stages)."""
    out = session.run(
        _tool("ansible"),
        "localhost",
        "-m",
        "ansible.builtin.debug",
        "-a",
        "msg={{ query('gpulab.dlstack.stages') | join(',') }}",
        env=_testbed_env(),
        silent=True,
    )
    found = re.search(r'"msg": "([a-z_,]+)"', str(out))
    if found is None:
        raise RuntimeError(f"cannot read the stage list from the gpulab.dlstack.stages lookup: {out}")
    return found.group(1).split(",")


def _stack_table(fact: dict[str, object], order: list[str]) -> str:
    """The recorded stack and stage states (preflight's local fact) as text lines, in pipeline order."""
    stack = fact.get("stack") or {}
    assert isinstance(stack, dict)
    gpus = fact.get("gpus") or []
    assert isinstance(gpus, list)
    head = (
        f"profile {fact.get('profile')}; GPUs: {', '.join(str(g.get('name')) for g in gpus) or 'none'}; "
        f"TensorFlow {stack.get('tensorflow')}, Python {stack.get('python')}, CUDA {stack.get('cuda')}, "
        f"cuDNN {stack.get('cudnn')}, TensorRT {stack.get('tensorrt')}"
    )
    stages = fact.get("stages") or {}
    assert isinstance(stages, dict)
    lines = [head]
    for stage in order:
        rec = stages.get(stage) or {}
        installed = rec.get("installed") or rec.get("wanted") or ""
        lines.append(f"  {stage:<26} {rec.get('state', ''):<8} {installed:<22} {rec.get('reason', '')}")
    return "\n".join(lines)


def _ansible_playbook(session: nox.Session, hosts: list[str], playbook: str, *extra: str, silent: bool = False) -> str:
    """Run a playbook against test-bed containers through the docker connection; its output when silent."""
    output = session.run(
        _tool("ansible-playbook"),
        "-i",
        ",".join(hosts) + ",",
        "-c",
        "community.docker.docker",
        playbook,
        *extra,
        env=_testbed_env(),
        silent=silent,
    )
    return str(output) if silent else ""


def _playbook(session: nox.Session, hosts: list[str], playbook: str, *extra: str) -> tuple[float, dict[str, int]]:
    """Run a playbook against test-bed containers; return its wall time and the changed count per host."""
    started = time.monotonic()
    output = _ansible_playbook(session, hosts, playbook, *extra, silent=True)
    elapsed = round(time.monotonic() - started, 1)
    changed = {
        m.group(1): int(m.group(2))
        for m in re.finditer(r"^(\S+)\s*:\s*ok=\d+\s+changed=(\d+)", output, flags=re.MULTILINE)
    }
    return elapsed, changed


def _busy_s() -> float:
    """CPU seconds the whole machine has spent busy since boot (/proc/stat): the test bed's hosts are containers on
    the same cores as the controller, so a phase's busy share tells a CPU-bound phase from one that waits."""
    with open("/proc/stat", encoding="ascii") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _load() -> float:
    """The machine's 1-minute load average: figures taken on shared cores are only comparable with it."""
    return round(os.getloadavg()[0], 2)


@nox.session(venv_backend="none")
def bench(session: nox.Session) -> None:
    """Benchmarks that write figures (reports/bench/*.json); nothing here is a pass/fail test.

    One run records: a cold provision of one container and its idempotent re-run (verify left out of
    both and timed apart), then re-runs of an unchanged fleet of 1, 4 and 8 containers at once (all
    provisioned cold together first). `nox -s bench -- 1,4,8` sets the fleet sizes.
    """
    _install(session)
    sizes = sorted({int(n) for n in (session.posargs[0] if session.posargs else "1,4,8").split(",") if n})
    out = ROOT / "reports" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    _testbed_up(session, "debian12")
    figures: dict[str, object] = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host_cpus": os.cpu_count(),
        "revision": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
        ).stdout.strip(),
    }
    no_verify = ("--skip-tags", "verify")
    load: dict[str, float] = {"start": _load()}
    figures["load_1min_after"] = load
    names = [f"dlstack-bench-{os.getpid()}-{i}" for i in range(max(sizes))]
    for host in names:
        _start_container(host, "debian12")
    try:
        first = names[:1]
        cold = _playbook(session, first, "provision.yml", *no_verify)[0]
        load["provision_cold"] = _load()
        rerun, changed = _playbook(session, first, "provision.yml", *no_verify)
        load["provision_rerun"] = _load()
        figures["provision_cold_s"], figures["provision_rerun_s"] = cold, rerun
        figures["provision_rerun_changed"] = changed.get(first[0])
        figures["provision_rerun_fraction_of_cold"] = round(rerun / cold, 3)
        figures["verify_s"] = _playbook(session, first, "playbooks/verify.yml")[0]
        load["verify"] = _load()
        forks = ("-f", str(max(len(names), 5)))
        figures["fleet_cold_s"] = {str(len(names)): _playbook(session, names, "provision.yml", *no_verify, *forks)[0]}
        load["fleet_cold"] = _load()
        reruns: dict[str, float] = {}
        rerun_changed: dict[str, int] = {}
        busy: dict[str, float] = {}
        for size in sizes:
            before = _busy_s()
            reruns[str(size)], changed = _playbook(session, names[:size], "provision.yml", *no_verify, *forks)
            busy[str(size)] = round((_busy_s() - before) / (reruns[str(size)] * (os.cpu_count() or 1)), 2)
            rerun_changed[str(size)] = sum(changed.values())
            load[f"fleet_rerun_{size}"] = _load()
        figures["fleet_rerun_s"] = reruns
        figures["fleet_rerun_changed"] = rerun_changed
        figures["fleet_rerun_cpu_busy_fraction"] = busy
        figures["fleet_rerun_largest_over_one"] = round(reruns[str(sizes[-1])] / reruns[str(sizes[0])], 2)
    finally:
        for host in names:
            _docker("rm", "-f", host, check=False)
    path = out / "provision.json"
    path.write_text(json.dumps(figures, indent=2) + "\n")
    session.log(f"wrote {path}: {json.dumps(figures)}")
    _bench_tfbuild(session, out)


def _bench_tfbuild(session: nox.Session, out: Path) -> None:
    """Cold build versus wheelhouse hit of the tensorflow_build test workspace (reports/bench/tfbuild.json)."""
    name = f"dlstack-bench-tfbuild-{os.getpid()}"
    report = out / "tfbuild.json"
    _start_container(name, "debian12")
    try:
        _ansible_playbook(
            session, [name], str(ROOT / "molecule" / "tfbuild" / "bench.yml"), "-e", f"bench_report={report}"
        )
    finally:
        _docker("rm", "-f", name, check=False)
    session.log(f"wrote {report}: {report.read_text()}")


@nox.session(venv_backend="none")
def docs(session: nox.Session) -> None:
    """Regenerate each role's README variable table from meta/argument_specs.yml, then build the collection's docs
    site with antsibull-docs and Sphinx into build/docs/html (open build/docs/html/index.html).

    `nox -s docs -- --check` only checks the README tables. Offline, Sphinx cannot fetch the Ansible and Python
    inventories its cross-references point at; those links stay plain text and Sphinx warns, the rest builds.
    """
    _install(session)
    session.run(_tool("python"), str(ROOT / "tests" / "docs" / "role_docs.py"), *session.posargs)
    if "--check" in session.posargs:
        return
    site = ROOT / "build" / "docs"
    shutil.rmtree(site, ignore_errors=True)
    site.mkdir(parents=True)
    env = _testbed_env()
    common = ["--use-current", "--fail-on-error"]
    session.run(
        _tool("antsibull-docs"),
        "sphinx-init",
        *common,
        "--dest-dir",
        str(site),
        "--project",
        "gpulab.dlstack",
        "--title",
        "gpulab.dlstack",
        "--copyright",
        "gpulab.dlstack maintainers",
        "gpulab.dlstack",
        env=env,
    )
    rst = site / "rst"
    rst.chmod(0o755)  # antsibull-docs wants its output folder writable by itself only
    session.run(
        _tool("antsibull-docs"),
        "--config-file",
        str(site / "antsibull-docs.cfg"),
        "collection",
        *common,
        "--cleanup",
        "everything",
        "--dest-dir",
        str(rst),
        "gpulab.dlstack",
        env=env,
    )
    with (site / "conf.py").open("a") as conf:
        conf.write("\n# Offline builds: give up on the intersphinx inventories quickly.\nintersphinx_timeout = 3\n")
    session.run(_tool("sphinx-build"), "-M", "html", str(rst), str(site), "-c", str(site), "-q", env=env)
    index = site / "html" / "index.html"
    if not (site / "html" / "collections" / "gpulab" / "dlstack" / "index.html").exists():
        session.error(f"the docs site has no collection page under {site / 'html'}")
    session.log(f"docs site: open {index}")


# CPU builds of the gpu workload's backends, one virtual environment each under .nox/, for `nox -s backends`.
BACKEND_REQUIREMENTS = {
    "torch": ["torch==2.13.0+cpu", "numpy==2.4.6"],
    "jax": ["jax[cpu]==0.10.2", "numpy==2.4.6"],
}


def _imports(python: Path, module: str) -> bool:
    return subprocess.run([str(python), "-c", f"import {module}"], capture_output=True, check=False).returncode == 0


@nox.session(venv_backend="none")
def backends(session: nox.Session) -> None:
    """The gpu workload's torch and jax code on CPU, through a GPU stand-in (test_workloads_standin.py).

    The two environments take about 1.5 GB and two to three minutes to create, once (.nox/_backend_*).
    torch's CPU build (the +cpu wheel) must be reachable by pip's configured index or find-links; a
    backend that cannot be installed is reported and its tests skip with the reason.
    """
    _install(session)
    env = {}
    for backend, requirements in BACKEND_REQUIREMENTS.items():
        venv = ROOT / ".nox" / f"_backend_{backend}"
        python = venv / "bin" / "python"
        stamp = venv / "dlstack-requirements.txt"
        wanted = "\n".join(requirements) + "\n"
        if not stamp.exists() or stamp.read_text() != wanted:
            session.run(sys.executable, "-m", "venv", "--clear", str(venv))
            session.run(str(python), "-m", "pip", "install", "-q", *requirements, success_codes=[0, 1])
            if not _imports(python, backend):
                # The tests of this backend then skip, saying the variable is unset; the others still run.
                session.warn(f"{backend}: cannot install {' '.join(requirements)} from pip's configured sources")
                continue
            stamp.write_text(wanted)
        env[f"DLSTACK_TEST_{backend.upper()}_PYTHON"] = str(python)
    session.run(_tool("pytest"), "tests/unit/plugins/module_utils/test_workloads_standin.py", *session.posargs, env=env)
