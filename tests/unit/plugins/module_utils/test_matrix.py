"""Sanity of the compatibility matrix data: sources, ordering, internal consistency."""

from __future__ import annotations

import re
from typing import Any, Dict, List

import pytest
from ansible_collections.gpulab.dlstack.plugins.module_utils import _matrix
from ansible_collections.gpulab.dlstack.plugins.module_utils._resolve import vtuple

TABLES: Dict[str, List[Dict[str, Any]]] = {
    "GPUS": _matrix.GPUS,
    "TENSORFLOW": _matrix.TENSORFLOW,
    "CUDA": _matrix.CUDA,
    "CUDNN": _matrix.CUDNN,
    "COMPILER_CONFLICTS": _matrix.COMPILER_CONFLICTS,
    "OPERATING_SYSTEMS": _matrix.OPERATING_SYSTEMS,
}
ALL_ROWS = [(name, i, row) for name, rows in TABLES.items() for i, row in enumerate(rows)]
TF_MINORS = [f"2.{m}" for m in range(6, 22)]
GPU_KEYS = {
    "name",
    "aliases",
    "pci_device_ids",
    "compute_capability",
    "peak_tflops",
    "mem_bw_gbs",
    "pcie_gen",
    "source",
}


@pytest.mark.parametrize(("table", "index", "row"), ALL_ROWS, ids=[f"{t}[{i}]" for t, i, _row in ALL_ROWS])
def test_every_row_names_a_source(table: str, index: int, row: Dict[str, Any]) -> None:
    assert isinstance(row.get("source"), str)
    assert len(row["source"]) > 10, f"{table}[{index}] needs a public source"


def test_tensorflow_covers_2_6_to_2_21_in_order() -> None:
    versions = [r["version"] for r in _matrix.TENSORFLOW]
    assert versions == TF_MINORS


def test_cuda_versions_ordered_and_unique() -> None:
    versions = [vtuple(r["version"]) for r in _matrix.CUDA]
    assert versions == sorted(versions)
    assert len(set(versions)) == len(versions)


def test_cudnn_versions_ordered() -> None:
    versions = [vtuple(r["version"]) for r in _matrix.CUDNN]
    assert versions == sorted(versions)


@pytest.mark.parametrize("row", _matrix.CUDA, ids=[r["version"] for r in _matrix.CUDA])
def test_cuda_row_consistent(row: Dict[str, Any]) -> None:
    assert vtuple(row["full"])[:2] == vtuple(row["version"])
    assert vtuple(row["min_sm"]) < vtuple(row["max_sm"])
    assert vtuple(row["driver_min_compat"]) <= vtuple(row["driver_min"])
    assert re.match(r"^\d{3}\.\d+(\.\d+)?$", row["driver_min"])


def test_driver_floors_rise_with_cuda() -> None:
    floors = [vtuple(r["driver_min"]) for r in _matrix.CUDA]
    assert floors == sorted(floors)


@pytest.mark.parametrize(
    ("cuda", "driver_min"),
    [
        ("11.2", "460.27.03"),
        ("11.8", "520.61.05"),
        ("12.0", "525.60.13"),
        ("12.2", "535.54.03"),
        ("12.3", "545.23.06"),
        ("12.5", "555.42.02"),
        ("12.6", "560.28.03"),
        ("12.8", "570.26"),
        ("12.9", "575.51.03"),
        ("13.0", "580.65.06"),
    ],
)
def test_driver_floor_matches_reference(cuda: str, driver_min: str) -> None:
    row = _matrix.cuda_row(cuda)
    assert row is not None
    assert row["driver_min"] == driver_min


@pytest.mark.parametrize("row", _matrix.TENSORFLOW, ids=[r["version"] for r in _matrix.TENSORFLOW])
def test_tensorflow_row_consistent(row: Dict[str, Any]) -> None:
    low, high = row["python"]
    assert vtuple(low) <= vtuple(high)
    assert row["era"] in _matrix.ERAS
    cuda = _matrix.cuda_row(row["cuda"])
    assert cuda is not None, "tested CUDA must be a CUDA row"
    cudnn = next((c for c in _matrix.CUDNN if c["version"] == row["cudnn"]), None)
    assert cudnn is not None, "tested cuDNN must be a cuDNN row"
    assert vtuple(cudnn["cuda_min"]) <= vtuple(row["cuda"]) <= vtuple(cudnn["cuda_max"])
    assert len(vtuple(row["cudnn"])) == 3
    for code in row["wheel_compute_capabilities"]:
        assert vtuple(cuda["min_sm"]) <= vtuple(code) <= vtuple(cuda["max_sm"])
    assert row["numpy"].startswith(">=")
    assert row["wheel_target"].startswith("//tensorflow/tools/pip_package")
    assert re.match(r"^\d+\.\d+\.\d+$", row["bazel"])
    if row["bazel_range"]:
        assert vtuple(row["bazel_range"][0]) <= vtuple(row["bazel"]) <= vtuple(row["bazel_range"][1])
    tested = row["compiler"]
    for rule in _matrix.COMPILER_CONFLICTS:
        hits = (
            rule["family"] == tested["family"]
            and (rule["tf_min"] is None or vtuple(row["version"]) >= vtuple(rule["tf_min"]))
            and (rule["tf_max"] is None or vtuple(row["version"]) <= vtuple(rule["tf_max"]))
            and (rule["compiler_min"] is None or vtuple(tested["version"]) >= vtuple(rule["compiler_min"]))
            and (rule["compiler_max"] is None or vtuple(tested["version"]) <= vtuple(rule["compiler_max"]))
        )
        assert not hits, f"tested compiler of {row['version']} hits {rule['source']}"
    if tested["family"] == "gcc":
        assert int(vtuple(tested["version"])[0]) <= int(cuda["gcc_max"])


@pytest.mark.parametrize("row", _matrix.TENSORFLOW, ids=[r["version"] for r in _matrix.TENSORFLOW])
def test_tensorrt_and_hermetic_eras(row: Dict[str, Any]) -> None:
    newer = vtuple(row["version"]) >= (2, 18)
    assert (row["era"] == "hermetic_cuda") == newer
    assert (row["tensorrt"] is None) == newer
    if row["tensorrt"]:
        spec = row["tensorrt"]
        assert vtuple(spec["min"]) <= vtuple(spec["default"])[:2] <= vtuple(spec["max"])
        assert vtuple(spec["max"]) < (9,)


def test_tensorflow_columns_rise_monotonically() -> None:
    rows = _matrix.TENSORFLOW
    for older, newer in zip(rows, rows[1:]):
        assert vtuple(older["cuda"]) <= vtuple(newer["cuda"])
        assert vtuple(older["cudnn"]) <= vtuple(newer["cudnn"])
        assert vtuple(older["bazel"]) <= vtuple(newer["bazel"])
        assert vtuple(older["python"][1]) <= vtuple(newer["python"][1])


@pytest.mark.parametrize("gpu", _matrix.GPUS, ids=[g["name"] for g in _matrix.GPUS])
def test_gpu_rows_have_exact_keys_and_types(gpu: Dict[str, Any]) -> None:
    assert GPU_KEYS <= set(gpu) <= GPU_KEYS | {"unverified", "host_link"}
    assert re.match(r"^\d{1,2}\.\d$", gpu["compute_capability"])
    assert gpu["pci_device_ids"]
    for pci in gpu["pci_device_ids"]:
        assert re.match(r"^[0-9a-f]{4}$", pci)
    assert set(gpu["peak_tflops"]) == {"fp32", "tf32", "bf16", "fp16"}
    for value in gpu["peak_tflops"].values():
        assert value is None or (isinstance(value, float) and value > 0)
    # A figure no primary source gave is None (no spec entry), never a guess.
    assert gpu["mem_bw_gbs"] is None or (isinstance(gpu["mem_bw_gbs"], float) and gpu["mem_bw_gbs"] > 0)
    assert gpu["pcie_gen"] in (None, 3, 4, 5, 6)
    assert isinstance(gpu["aliases"], list)


@pytest.mark.parametrize("gpu", _matrix.GPUS, ids=[g["name"] for g in _matrix.GPUS])
def test_gpu_rows_marked_u_name_their_unverified_fields(gpu: Dict[str, Any]) -> None:
    fields = {"fp32", "tf32", "bf16", "fp16", "mem_bw_gbs", "pcie_gen", "host_link"}
    unverified = gpu.get("unverified") or []
    assert set(unverified) <= fields
    # A row whose values all rest on primary sources has no [U]; a [U] value is named in unverified.
    assert ("[U]" in gpu["source"]) == bool(unverified), gpu["name"]


@pytest.mark.parametrize(
    ("name", "cc", "pci"),
    [
        ("NVIDIA A30", "8.0", "20b7"),
        ("NVIDIA H100 NVL", "9.0", "2321"),
        ("NVIDIA GH200 480GB", "9.0", "2342"),
        ("NVIDIA A10G", "8.6", "2237"),
        ("NVIDIA H20", "9.0", "2329"),
        ("NVIDIA H100 96GB HBM3", "9.0", "233d"),
    ],
)
def test_data_center_gpus_added(name: str, cc: str, pci: str) -> None:
    by_name = _matrix.find_gpu(name=name)
    assert by_name is not None and by_name["compute_capability"] == cc
    assert _matrix.find_gpu(pci_device_id=pci) is by_name


def test_gpu_names_and_pci_ids_are_unique() -> None:
    names = [n.lower() for g in _matrix.GPUS for n in [g["name"], *g["aliases"]]]
    assert len(names) == len(set(names))
    ids = [i for g in _matrix.GPUS for i in g["pci_device_ids"]]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"pci_device_id": "2335"}, "NVIDIA H200"),
        ({"pci_device_id": "0x2335"}, "NVIDIA H200"),
        ({"pci_device_id": "10de:2204"}, "NVIDIA GeForce RTX 3090"),
        ({"pci_device_id": "0x10DE2330"}, "NVIDIA H100 80GB HBM3"),
        ({"name": "nvidia geforce rtx 3090"}, "NVIDIA GeForce RTX 3090"),
        ({"name": "GeForce RTX 3090"}, "NVIDIA GeForce RTX 3090"),
        ({"name": "  NVIDIA   H200 "}, "NVIDIA H200"),
        ({"name": "Tesla V100-SXM2-32GB"}, "Tesla V100-SXM2-16GB"),
        ({"pci_device_id": "ffff"}, None),
        ({"name": "AMD Instinct MI300X"}, None),
        ({}, None),
    ],
)
def test_find_gpu(kwargs: Dict[str, Any], expected: Any) -> None:
    row = _matrix.find_gpu(**kwargs)
    assert (row["name"] if row else None) == expected


def test_find_gpu_uses_given_rows() -> None:
    rows = [{"name": "ACME X", "aliases": [], "pci_device_ids": ["abcd"], "compute_capability": "8.9"}]
    assert _matrix.find_gpu(pci_device_id="abcd", gpus=rows) is rows[0]
    assert _matrix.find_gpu(name="NVIDIA H200", gpus=rows) is None


@pytest.mark.parametrize(
    ("name", "fp32", "bf16", "bw"),
    [
        ("NVIDIA H200", 67.0, 989.0, 4800.0),
        ("NVIDIA A100-SXM4-80GB", 19.5, 312.0, 2039.0),
        ("NVIDIA GeForce RTX 4090", 82.6, 165.2, 1008.0),
        ("Tesla T4", 8.1, None, 320.0),
        # NVIDIA HGX table, HGX B200 column: FP32 75, FP16/BF16 4.5 PFLOPS sparse, 7.7 TB/s.
        ("NVIDIA B200", 75.0, 2250.0, 7700.0),
        # NVIDIA RTX 5090 page and RTX Blackwell whitepaper: 1792 GB/sec, 209.5 FP32-accumulate; FP32 not read.
        ("NVIDIA GeForce RTX 5090", None, 209.5, 1792.0),
        # H200 datasheet: 4.8 TB/s for the NVL card; its compute column was not found.
        ("NVIDIA H200 NVL", None, None, 4800.0),
        # No NVIDIA datasheet: nothing but the identity is kept.
        ("NVIDIA A10G", None, None, None),
        ("NVIDIA H20", None, None, None),
        ("NVIDIA H100 96GB HBM3", None, None, None),
    ],
)
def test_gpu_figures_match_reference(name: str, fp32: Any, bf16: Any, bw: Any) -> None:
    row = _matrix.find_gpu(name=name)
    assert row is not None
    assert row["peak_tflops"]["fp32"] == fp32
    assert row["peak_tflops"]["bf16"] == bf16
    assert row["mem_bw_gbs"] == bw


@pytest.mark.parametrize("row", _matrix.OPERATING_SYSTEMS, ids=[r["id"] for r in _matrix.OPERATING_SYSTEMS])
def test_os_rows(row: Dict[str, Any]) -> None:
    assert re.match(r"^\d\.\d+$", row["python"])
    assert row["gcc"] == sorted(row["gcc"], key=int)
    assert row["clang"] == sorted(row["clang"], key=int)
