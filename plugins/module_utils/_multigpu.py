# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Multi-GPU checks: peer-to-peer copy bandwidth/latency between every pair of GPUs and NCCL all-reduce bus bandwidth.

The links between GPUs come from ``nvidia-smi topo -m`` (``NV<n>``: n bonded NVLinks; ``PIX``/``PXB``/``PHB``/
``NODE``/``SYS``: PCIe paths); their one-way rate from the NVLink rows of ``_matrix`` or the PCIe link rate. The
workload (``SCRIPT``) runs with the framework of the environment under test: torch (``torch.cuda.nccl``) or CuPy
(``cupy.cuda.nccl``), both single-process NCCL over all GPUs.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional

from ansible_collections.gpulab.dlstack.plugins.module_utils._matrix import MULTI_GPU_THRESHOLDS, NVLINK, find_gpu
from ansible_collections.gpulab.dlstack.plugins.module_utils._verdict import grade, link_gbs, worst

PCIE_PATHS = ("PIX", "PXB", "PHB", "NODE", "SYS")
DEFAULT_THRESHOLDS: Dict[str, float] = {k: v for k, v in MULTI_GPU_THRESHOLDS.items() if isinstance(v, float)}
_NV = re.compile(r"^NV(\d+)$")


def parse_topology(text: str) -> List[List[str]]:
    """The GPU-by-GPU link matrix of ``nvidia-smi topo -m`` (``X`` on the diagonal); [] when no GPU header is found."""
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in (text or "").splitlines()]
    at = next((n for n, line in enumerate(lines) if re.match(r"^\s*GPU0\b", line)), None)
    if at is None:
        return []
    count = len([h for h in lines[at].split() if re.fullmatch(r"GPU\d+", h)])
    matrix: List[List[str]] = []
    for line in lines[at + 1 :]:
        cells = line.split()
        if cells and cells[0] == f"GPU{len(matrix)}" and len(cells) > count:
            matrix.append(cells[1 : count + 1])
        if len(matrix) == count:
            break
    return matrix if len(matrix) == count else []


def nvlink_row(gpu_name: Optional[str], rows: Optional[List[Dict[str, Any]]] = None) -> Optional[Dict[str, Any]]:
    rows = NVLINK if rows is None else rows
    spec = find_gpu(name=gpu_name) if gpu_name else None
    name = spec["name"] if spec else gpu_name
    return next((r for r in rows if r["gpu"] == name), None)


def link_spec(kind: str, gpu: Mapping[str, Any], peer: Mapping[str, Any]) -> Dict[str, Any]:
    """The one-way rate a copy between two GPUs is judged by, with its basis; gbs None when unknown."""
    match = _NV.match(kind)
    if match:
        links = int(match.group(1))
        row = nvlink_row(gpu.get("name")) or nvlink_row(peer.get("name"))
        if row is None:
            return {
                "kind": "nvlink",
                "links": links,
                "gbs": None,
                "basis": f"{links} NVLinks, but no NVLink spec for {gpu.get('name')}",
            }
        gbs = links * row["link_gbs"]
        return {
            "kind": "nvlink",
            "links": links,
            "gbs": gbs,
            "basis": f"{links} x NVLink{row['generation']} at {row['link_gbs']:g} GB/s one way = {gbs:g} GB/s",
        }
    if kind in PCIE_PATHS:
        gens = [g.get("pcie_gen_current") or g.get("pcie_gen_max") for g in (gpu, peer)]
        widths = [g.get("pcie_width_current") or g.get("pcie_width_max") or 16 for g in (gpu, peer)]
        gen = min((g for g in gens if g), default=None)
        gbs = link_gbs(gen, min(widths)) if gen else None
        basis = (
            f"PCIe ({kind}) gen{gen} x{min(widths)} one way = {gbs:g} GB/s" if gbs else f"PCIe ({kind}), gen unknown"
        )
        return {"kind": "pcie", "path": kind, "gbs": gbs, "basis": basis}
    return {"kind": "unknown", "gbs": None, "basis": f"link {kind!r} not understood"}


def _judge(value: Optional[float], spec: Optional[float], pass_at: float, warn_at: float) -> Dict[str, Any]:
    if value is None:
        return {"status": "fail", "reason": "not measured"}
    if not spec:
        return {"status": "warn", "value": value, "reason": "no link spec to judge by: at most warn"}
    fraction = value / spec
    status = grade(fraction, pass_at, warn_at)
    return {
        "status": status,
        "value": round(value, 2),
        "spec": spec,
        "fraction": round(fraction, 3),
        "reason": f"{fraction:.0%} of the link (pass at {pass_at:.0%})",
    }


def judge(
    doc: Mapping[str, Any], topology: List[List[str]], gpus: List[Mapping[str, Any]], thresholds: Mapping[str, float]
) -> Dict[str, Any]:
    """Checks per pair and for the all-reduce; the host is judged by its worst pair and its all-reduce."""
    p2p = doc.get("p2p") or {}
    bandwidth = p2p.get("bandwidth_gbs") or []
    latency = p2p.get("latency_us") or []
    access = p2p.get("access") or []
    count = len(gpus)
    pairs: List[Dict[str, Any]] = []
    for i in range(count):
        for j in range(count):
            if i == j:
                continue
            kind = topology[i][j] if i < len(topology) and j < len(topology[i]) else "?"
            spec = link_spec(kind, gpus[i], gpus[j])
            value = bandwidth[i][j] if i < len(bandwidth) and j < len(bandwidth[i]) else None
            entry = _judge(value, spec["gbs"], thresholds["p2p_pass"], thresholds["p2p_warn"])
            peer = bool(access[i][j]) if i < len(access) and j < len(access[i]) else None
            if peer is False and spec["kind"] == "nvlink":
                entry = {
                    "status": "fail",
                    "value": value,
                    "reason": "no peer access between NVLink-connected GPUs (copies go through the host)",
                }
            elif peer is False and entry["status"] == "pass":
                entry.update(status="warn", reason=entry["reason"] + "; no peer access: copies go through the host")
            entry.update(src=i, dst=j, link=spec, peer_access=peer)
            if i < len(latency) and j < len(latency[i]):
                entry["latency_us"] = latency[i][j]
            pairs.append(entry)
    checks: Dict[str, Dict[str, Any]] = {}
    if pairs:
        slowest = min(pairs, key=lambda e: float(e["fraction"]) if e.get("fraction") is not None else -1.0)
        status = worst(e["status"] for e in pairs)
        bad = [f"{e['src']}->{e['dst']}" for e in pairs if e["status"] != "pass"]
        checks["p2p"] = {
            "status": status,
            "value": slowest.get("value"),
            "unit": "GB/s",
            "fraction": slowest.get("fraction"),
            "reason": f"slowest pair {slowest['src']}->{slowest['dst']}: {slowest['reason']}"
            + (f"; not passing: {', '.join(bad)}" if bad else ""),
        }
    reduce = doc.get("allreduce") or {}
    if reduce:
        specs = [e["link"]["gbs"] for e in pairs if e["link"].get("gbs")]
        bottleneck = min(specs) if specs and len(specs) == len(pairs) else None
        entry = _judge(reduce.get("busbw_gbs"), bottleneck, thresholds["allreduce_pass"], thresholds["allreduce_warn"])
        if reduce.get("correct") is False:
            entry = {"status": "fail", "value": reduce.get("busbw_gbs"), "reason": "the all-reduce sum was wrong"}
        entry.update(unit="GB/s", ranks=reduce.get("ranks"), bytes=reduce.get("bytes"), algbw=reduce.get("algbw_gbs"))
        checks["allreduce_busbw"] = entry
    return {"pairs": pairs, "checks": checks, "verdict": worst(c["status"] for c in checks.values())}


SCRIPT = r"""
import json, sys, time

def main():
    cfg = json.load(open(sys.argv[1]))
    backend = cfg["backend"]
    out = {"backend": backend, "versions": {}}
    if backend == "torch":
        import torch
        out["versions"]["torch"] = torch.__version__
        n = torch.cuda.device_count()
        sync = lambda: [torch.cuda.synchronize(d) for d in range(n)]
        names = [torch.cuda.get_device_name(d) for d in range(n)]
        access = lambda i, j: bool(torch.cuda.can_device_access_peer(i, j))
        def buffers(i, j, nbytes):
            return torch.empty(nbytes, dtype=torch.uint8, device=i), torch.empty(nbytes, dtype=torch.uint8, device=j)
        def copy(src, dst):
            dst.copy_(src, non_blocking=True)
        def allreduce(nbytes):
            from torch.cuda import nccl
            count = nbytes // 4
            xs = [torch.full((count,), float(d + 1), device=d) for d in range(n)]
            def run():
                nccl.all_reduce(xs)
            def check():
                want = n * (n + 1) / 2
                return all(abs(float(x[0].item()) - want) < 1e-3 and abs(float(x[-1].item()) - want) < 1e-3 for x in xs)
            def reset():
                for d, x in enumerate(xs):
                    x.fill_(float(d + 1))
            return run, check, reset
    else:
        import cupy
        from cupy.cuda import nccl, runtime
        out["versions"]["cupy"] = cupy.__version__
        n = runtime.getDeviceCount()
        names = [runtime.getDeviceProperties(d)["name"].decode() for d in range(n)]
        def sync():
            for d in range(n):
                with cupy.cuda.Device(d):
                    cupy.cuda.Device(d).synchronize()
        access = lambda i, j: bool(runtime.deviceCanAccessPeer(i, j))
        for i in range(n):
            for j in range(n):
                if i != j and access(i, j):
                    with cupy.cuda.Device(i):
                        try:
                            runtime.deviceEnablePeerAccess(j)
                        except runtime.CUDARuntimeError:
                            pass
        def buffers(i, j, nbytes):
            with cupy.cuda.Device(i):
                a = cupy.empty(nbytes, dtype=cupy.uint8)
            with cupy.cuda.Device(j):
                b = cupy.empty(nbytes, dtype=cupy.uint8)
            return a, b
        def copy(src, dst):
            runtime.memcpyPeerAsync(dst.data.ptr, dst.device.id, src.data.ptr, src.device.id, src.nbytes, 0)
        def allreduce(nbytes):
            count = nbytes // 4
            comms = nccl.NcclCommunicator.initAll(list(range(n)))
            xs = []
            for d in range(n):
                with cupy.cuda.Device(d):
                    xs.append(cupy.full((count,), d + 1, dtype=cupy.float32))
            def run():
                nccl.groupStart()
                for d, comm in enumerate(comms):
                    with cupy.cuda.Device(d):
                        comm.allReduce(xs[d].data.ptr, xs[d].data.ptr, count, nccl.NCCL_FLOAT32, nccl.NCCL_SUM,
                                       cupy.cuda.Stream.null.ptr)
                nccl.groupEnd()
            def check():
                want = n * (n + 1) / 2
                return all(abs(float(x[0]) - want) < 1e-3 and abs(float(x[-1]) - want) < 1e-3 for x in xs)
            def reset():
                for d, x in enumerate(xs):
                    with cupy.cuda.Device(d):
                        x.fill(d + 1)
            return run, check, reset
    out["gpus"] = [{"index": d, "name": names[d]} for d in range(n)]
    if n < 2:
        out["reason"] = "The framework sees %d GPU(s): no peer to measure." % n
        print(json.dumps(out))
        return
    pairs = [(i, j) for i in range(n) for j in range(n) if i != j]
    share = cfg["time_budget"] * 0.6 / len(pairs)
    nbytes = cfg["copy_mib"] << 20
    bw = [[None] * n for _ in range(n)]
    lat = [[None] * n for _ in range(n)]
    acc = [[None] * n for _ in range(n)]
    for i, j in pairs:
        acc[i][j] = access(i, j)
        src, dst = buffers(i, j, nbytes)
        copy(src, dst)
        sync()
        best, end = None, time.perf_counter() + share
        while time.perf_counter() < end or best is None:
            t0 = time.perf_counter()
            copy(src, dst)
            sync()
            dt = time.perf_counter() - t0
            best = dt if best is None or dt < best else best
        bw[i][j] = nbytes / best / 1e9
        small_src, small_dst = buffers(i, j, 4)
        t0 = time.perf_counter()
        for _ in range(100):
            copy(small_src, small_dst)
        sync()
        lat[i][j] = (time.perf_counter() - t0) / 100 * 1e6
        del src, dst, small_src, small_dst
    out["p2p"] = {"bandwidth_gbs": bw, "latency_us": lat, "access": acc, "bytes": nbytes}
    size = cfg["allreduce_mib"] << 20
    run, check, reset = allreduce(size)
    run()
    sync()
    correct = check()
    reset()
    iters, end, t_total = 0, time.perf_counter() + cfg["time_budget"] * 0.3, 0.0
    while time.perf_counter() < end or iters < 3:
        t0 = time.perf_counter()
        run()
        sync()
        t_total += time.perf_counter() - t0
        iters += 1
    algbw = size / (t_total / iters) / 1e9
    out["allreduce"] = {"ranks": n, "bytes": size, "iterations": iters, "time_s": t_total / iters,
                        "algbw_gbs": algbw, "busbw_gbs": algbw * 2 * (n - 1) / n, "correct": correct}
    print(json.dumps(out))

try:
    main()
except Exception as exc:
    print(json.dumps({"error": "%s: %s" % (type(exc).__name__, exc)}))
"""
