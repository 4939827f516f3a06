# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The compatibility model of gpulab.dlstack as reviewed data.

Every row carries the public source it was taken from. A value that could not be
confirmed from a primary source keeps the marker ``[U]`` in its ``source`` string.
Only tiny accessors live here; the reasoning over these rows is in ``_resolve.py``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

_SRC_ML_ENG = "stas00/ml-engineering compute/accelerator/README.md"
_SRC_PCI_IDS = "pciutils pci.ids"

_SRC_GPU_ADMIN = "NVIDIA/gpu-admin-tools gpu/devid_names.py (device ids per model)"
# NVIDIA's HGX platform page, table "Technical Specifications" (GB200 NVL72 | HGX B200 columns), read through
# two reproductions of that table (zdszero.github.io Computer/Artificial_Intelligence/Hardware.html and
# hpc-ai.com blog B200-Practical-Considerations-for-AI-Teams): per HGX B200 GPU FP32 75 TFLOPS, TF32 Tensor
# 2.2 PFLOPS and FP16/BF16 Tensor 4.5 PFLOPS (sparse), 180 GB HBM3E at 7.7 TB/s (62 TB/s for the 8 GPUs),
# PCIe Gen5 128 GB/s. Earlier material quotes 8 TB/s per B200 (this row's former value); the table is the
# figure NVIDIA gives for the shipping 180 GB part, and the lower of the two, so no healthy GPU fails on it.
_SRC_HGX_B200 = "NVIDIA HGX platform page, Technical Specifications table, HGX B200 column (via reproductions)"
# NVIDIA GeForce RTX 5090 product page (specifications: Memory Bandwidth 1792 GB/sec) and the NVIDIA RTX
# Blackwell GPU architecture whitepaper appendix (RTX 5090: Memory Bandwidth 1792 GB/sec, Peak FP16/BF16
# Tensor TFLOPS with FP32 Accumulate 209.5 dense), as quoted in public repositories.
_SRC_RTX_5090 = "NVIDIA RTX 5090 product page and RTX Blackwell architecture whitepaper appendix"

# GPU models: spec peaks are dense (no sparsity) TFLOP/s, memory bandwidth in GB/s.
# GeForce cards: bf16/fp16 hold the FP32-accumulate tensor rate.
# unverified: the fields (fp32, tf32, bf16, fp16, mem_bw_gbs, pcie_gen, host_link) whose value could
# not be confirmed from a primary source; their source carries [U] and verdicts computed from them are
# at most warn (_verdict.cap_unverified).
# host_link: where host copies do not cross PCIe (GH200's NVLink-C2C), the one-way rate they are judged by.
GPUS: List[Dict[str, Any]] = [
    {
        "name": "Tesla V100-SXM2-16GB",
        "aliases": ["Tesla V100-SXM2-32GB", "V100 SXM2"],
        "pci_device_ids": ["1db1", "1db5"],
        "compute_capability": "7.0",
        "peak_tflops": {"fp32": 15.7, "tf32": None, "bf16": None, "fp16": 125.0},
        "mem_bw_gbs": 900.0,
        "pcie_gen": 3,
        "source": "NVIDIA V100 datasheet; " + _SRC_ML_ENG + "; " + _SRC_PCI_IDS,
    },
    {
        "name": "Tesla V100-PCIE-16GB",
        "aliases": ["Tesla V100-PCIE-32GB", "V100 PCIe"],
        "pci_device_ids": ["1db4", "1db6"],
        "compute_capability": "7.0",
        "peak_tflops": {"fp32": 14.0, "tf32": None, "bf16": None, "fp16": 112.0},
        "mem_bw_gbs": 900.0,
        "pcie_gen": 3,
        "source": "NVIDIA V100 datasheet; " + _SRC_ML_ENG + "; " + _SRC_PCI_IDS,
    },
    {
        "name": "Tesla T4",
        "aliases": ["NVIDIA T4", "T4"],
        "pci_device_ids": ["1eb8"],
        "compute_capability": "7.5",
        "peak_tflops": {"fp32": 8.1, "tf32": None, "bf16": None, "fp16": 65.0},
        "mem_bw_gbs": 320.0,
        "pcie_gen": 3,
        "source": "NVIDIA T4 datasheet; " + _SRC_ML_ENG + "; " + _SRC_PCI_IDS,
    },
    {
        "name": "NVIDIA A10",
        "aliases": ["A10"],
        "pci_device_ids": ["2236"],
        "compute_capability": "8.6",
        "peak_tflops": {"fp32": 31.2, "tf32": 62.5, "bf16": 125.0, "fp16": 125.0},
        "mem_bw_gbs": 600.0,
        "pcie_gen": 4,
        "source": "NVIDIA A10 datasheet; " + _SRC_ML_ENG + "; " + _SRC_PCI_IDS,
    },
    {
        "name": "NVIDIA A100-SXM4-40GB",
        "aliases": ["A100 SXM4 40GB"],
        "pci_device_ids": ["20b0"],
        "compute_capability": "8.0",
        "peak_tflops": {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0},
        "mem_bw_gbs": 1555.0,
        "pcie_gen": 4,
        "source": "NVIDIA A100 datasheet; " + _SRC_ML_ENG + "; " + _SRC_PCI_IDS,
    },
    {
        "name": "NVIDIA A100-PCIE-40GB",
        "aliases": ["A100 PCIe 40GB"],
        "pci_device_ids": ["20b1", "20f1"],
        "compute_capability": "8.0",
        "peak_tflops": {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0},
        "mem_bw_gbs": 1555.0,
        "pcie_gen": 4,
        "source": "NVIDIA A100 datasheet; " + _SRC_ML_ENG + "; " + _SRC_PCI_IDS,
    },
    {
        "name": "NVIDIA A100-SXM4-80GB",
        "aliases": ["A100 SXM4 80GB"],
        "pci_device_ids": ["20b2"],
        "compute_capability": "8.0",
        "peak_tflops": {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0},
        "mem_bw_gbs": 2039.0,
        "pcie_gen": 4,
        "source": "NVIDIA A100 80GB datasheet; " + _SRC_ML_ENG + "; " + _SRC_PCI_IDS,
    },
    {
        "name": "NVIDIA A100 80GB PCIe",
        "aliases": ["NVIDIA A100-PCIE-80GB", "A100 PCIe 80GB"],
        "pci_device_ids": ["20b5"],
        "compute_capability": "8.0",
        "peak_tflops": {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0},
        "mem_bw_gbs": 1935.0,
        "pcie_gen": 4,
        "source": "NVIDIA A100 80GB datasheet; " + _SRC_ML_ENG + "; " + _SRC_PCI_IDS,
    },
    {
        "name": "NVIDIA L4",
        "aliases": ["L4"],
        "pci_device_ids": ["27b8"],
        "compute_capability": "8.9",
        "peak_tflops": {"fp32": 30.3, "tf32": 60.0, "bf16": 121.0, "fp16": 121.0},
        "mem_bw_gbs": 300.0,
        "pcie_gen": 4,
        "source": "NVIDIA L4 datasheet; " + _SRC_ML_ENG + "; " + _SRC_PCI_IDS,
    },
    {
        "name": "NVIDIA L40S",
        "aliases": ["L40S"],
        "pci_device_ids": ["26b9"],
        "compute_capability": "8.9",
        "peak_tflops": {"fp32": 91.6, "tf32": 183.0, "bf16": 362.0, "fp16": 362.0},
        "mem_bw_gbs": 864.0,
        "pcie_gen": 4,
        "source": "NVIDIA L40S datasheet; " + _SRC_ML_ENG + "; " + _SRC_PCI_IDS,
    },
    {
        "name": "NVIDIA H100 80GB HBM3",
        "aliases": ["NVIDIA H100 SXM5 80GB", "H100 SXM"],
        "pci_device_ids": ["2330"],
        "compute_capability": "9.0",
        "peak_tflops": {"fp32": 67.0, "tf32": 494.7, "bf16": 989.0, "fp16": 989.0},
        "mem_bw_gbs": 3350.0,
        "pcie_gen": 5,
        "source": "NVIDIA H100 datasheet; " + _SRC_ML_ENG + "; " + _SRC_PCI_IDS,
    },
    {
        "name": "NVIDIA H100 PCIe",
        "aliases": ["H100 PCIe"],
        "pci_device_ids": ["2331"],
        "compute_capability": "9.0",
        "peak_tflops": {"fp32": 51.0, "tf32": 378.0, "bf16": 756.0, "fp16": 756.0},
        "mem_bw_gbs": 2000.0,
        "pcie_gen": 5,
        "source": "NVIDIA H100 datasheet; " + _SRC_ML_ENG + "; " + _SRC_PCI_IDS,
    },
    {
        "name": "NVIDIA H200",
        "aliases": ["NVIDIA H200 SXM", "H200 SXM", "H200"],
        "pci_device_ids": ["2335"],
        "compute_capability": "9.0",
        "peak_tflops": {"fp32": 67.0, "tf32": 494.5, "bf16": 989.0, "fp16": 989.0},
        "mem_bw_gbs": 4800.0,
        "pcie_gen": 5,
        "source": "NVIDIA H200 datasheet (SXM); " + _SRC_ML_ENG + "; " + _SRC_PCI_IDS,
    },
    {
        "name": "NVIDIA H200 NVL",
        "aliases": ["H200 NVL"],
        "pci_device_ids": ["233b"],
        "compute_capability": "9.0",
        "peak_tflops": {"fp32": None, "tf32": None, "bf16": None, "fp16": None},
        "mem_bw_gbs": 4800.0,
        "pcie_gen": 5,
        "source": "NVIDIA H200 datasheet (4.8 TB/s for SXM and NVL alike); the NVL column's compute peaks were "
        "not found in a primary source and are left out (no spec entry: matmul speed is not judged); " + _SRC_PCI_IDS,
    },
    {
        "name": "NVIDIA A30",
        "aliases": ["A30"],
        "pci_device_ids": ["20b7"],
        "compute_capability": "8.0",
        "peak_tflops": {"fp32": 10.3, "tf32": 82.0, "bf16": 165.0, "fp16": 165.0},
        "mem_bw_gbs": 933.0,
        "pcie_gen": 4,
        "source": "NVIDIA A30 datasheet (dense figures); " + _SRC_PCI_IDS,
    },
    {
        "name": "NVIDIA A10G",
        "aliases": ["A10G"],
        "pci_device_ids": ["2237"],
        "compute_capability": "8.6",
        "peak_tflops": {"fp32": None, "tf32": None, "bf16": None, "fp16": None},
        "mem_bw_gbs": None,
        "pcie_gen": 4,
        "source": "AWS EC2 G5 (GA102 like the A10, PCIe Gen4); NVIDIA publishes no A10G datasheet, so every "
        "peak and the memory bandwidth are left out (no spec entry: speed is not judged); " + _SRC_PCI_IDS,
    },
    {
        "name": "NVIDIA H100 NVL",
        "aliases": ["H100 NVL"],
        "pci_device_ids": ["2321"],
        "compute_capability": "9.0",
        "peak_tflops": {"fp32": 60.0, "tf32": 417.5, "bf16": 835.5, "fp16": 835.5},
        "mem_bw_gbs": 3900.0,
        "pcie_gen": 5,
        "source": "NVIDIA H100 datasheet (H100 NVL column per GPU, sparse figures halved); "
        + _SRC_GPU_ADMIN
        + "; nvidia-smi name and 0x232110DE in akash-network/provider-configs#91"
        + "; "
        + _SRC_PCI_IDS,
    },
    {
        "name": "NVIDIA H100 96GB HBM3",
        "aliases": ["H100 96GB"],
        "pci_device_ids": ["233d"],
        "compute_capability": "9.0",
        "peak_tflops": {"fp32": None, "tf32": None, "bf16": None, "fp16": None},
        "mem_bw_gbs": None,
        "pcie_gen": 5,
        "source": "Hopper (GH100, compute capability 9.0, PCIe Gen5 like every H100); device id 233d among the "
        "H100 ids in "
        + _SRC_GPU_ADMIN
        + "; NVIDIA publishes no datasheet for the 96 GB part, so its peaks and memory bandwidth are left out "
        "(no spec entry: speed is not judged)",
    },
    {
        "name": "NVIDIA GH200 480GB",
        "aliases": ["GH200", "NVIDIA GH200", "GH200 480GB"],
        "pci_device_ids": ["2342"],
        "compute_capability": "9.0",
        "peak_tflops": {"fp32": 67.0, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5},
        "mem_bw_gbs": 4000.0,
        "pcie_gen": 5,
        "host_link": {"kind": "NVLink-C2C", "gbs": 450.0},
        "source": "NVIDIA GH200 Grace Hopper Superchip datasheet (96 GB HBM3 at 4 TB/s; NVLink-C2C 900 GB/s "
        "both ways, 450 one way; sparse figures halved); " + _SRC_GPU_ADMIN,
    },
    {
        "name": "NVIDIA H20",
        "aliases": ["H20"],
        "pci_device_ids": ["2329"],
        "compute_capability": "9.0",
        "peak_tflops": {"fp32": None, "tf32": None, "bf16": None, "fp16": None},
        "mem_bw_gbs": None,
        "pcie_gen": 5,
        "source": "Hopper part for China (compute capability 9.0); NVIDIA publishes no datasheet, the figures "
        "in vendor briefs are left out (no spec entry: speed is not judged); " + _SRC_GPU_ADMIN,
    },
    {
        "name": "NVIDIA B200",
        "aliases": ["B200"],
        "pci_device_ids": ["2901"],
        "compute_capability": "10.0",
        "peak_tflops": {"fp32": 75.0, "tf32": 1100.0, "bf16": 2250.0, "fp16": 2250.0},
        "mem_bw_gbs": 7700.0,
        "pcie_gen": 5,
        "source": (
            _SRC_HGX_B200 + " (FP32 75; TF32 2.2 and FP16/BF16 4.5 PFLOPS sparse, halved; 180 GB HBM3E at "
            "7.7 TB/s, not the 8 TB/s quoted earlier; PCIe Gen5 128 GB/s); " + _SRC_PCI_IDS
        ),
    },
    {
        "name": "NVIDIA GeForce RTX 3090",
        "aliases": ["GeForce RTX 3090", "RTX 3090"],
        "pci_device_ids": ["2204"],
        "compute_capability": "8.6",
        "peak_tflops": {"fp32": 35.6, "tf32": 35.6, "bf16": 71.0, "fp16": 71.0},
        "mem_bw_gbs": 936.0,
        "pcie_gen": 4,
        "source": "NVIDIA Ampere GA102 whitepaper (FP32-accumulate tensor rate); Lightning throughput.py; "
        + _SRC_PCI_IDS,
    },
    {
        "name": "NVIDIA GeForce RTX 4090",
        "aliases": ["GeForce RTX 4090", "RTX 4090"],
        "pci_device_ids": ["2684"],
        "compute_capability": "8.9",
        "peak_tflops": {"fp32": 82.6, "tf32": 82.6, "bf16": 165.2, "fp16": 165.2},
        "mem_bw_gbs": 1008.0,
        "pcie_gen": 4,
        "source": "NVIDIA Ada Lovelace whitepaper (FP32-accumulate tensor rate); Lightning throughput.py; "
        + _SRC_PCI_IDS,
    },
    {
        "name": "NVIDIA RTX A6000",
        "aliases": ["RTX A6000"],
        "pci_device_ids": ["2230"],
        "compute_capability": "8.6",
        "peak_tflops": {"fp32": 38.7, "tf32": 77.4, "bf16": 154.8, "fp16": 154.8},
        "mem_bw_gbs": 768.0,
        "pcie_gen": 4,
        "source": "NVIDIA RTX A6000 datasheet; Lightning throughput.py; " + _SRC_PCI_IDS,
    },
    {
        "name": "NVIDIA GeForce RTX 5090",
        "aliases": ["GeForce RTX 5090", "RTX 5090"],
        "pci_device_ids": ["2b85"],
        "compute_capability": "12.0",
        "peak_tflops": {"fp32": None, "tf32": None, "bf16": 209.5, "fp16": 209.5},
        "mem_bw_gbs": 1792.0,
        "pcie_gen": None,
        "source": _SRC_RTX_5090
        + " (1792 GB/sec; FP16/BF16 with FP32 accumulate 209.5); the FP32/TF32 rates and the PCIe generation "
        "were not read in NVIDIA text and are left out (no spec entry; the link rate comes from the GPU's own "
        "reported PCIe generation); " + _SRC_PCI_IDS + " (2b85 GB202 [GeForce RTX 5090])",
    },
]


_SRC_TF_TESTED = "tensorflow/docs site/en/install/source.md (tested build configurations)"
_SRC_SPACK_TF = "Spack py_tensorflow/package.py"
_SRC_PYPI = "PyPI tensorflow {} metadata (Requires-Python, Requires-Dist)"
_SRC_TRT = (
    "TF-TRT: TensorRT 8 needs TF >= 2.7 (tensorflow#49150), TensorRT 9/10 unsupported (tensorflow#68360), "
    "2.17 release notes: last release with TensorRT; TensorRT ceiling 8.6 and default 8.6.1 [U]"
)
_SRC_TRT_SO7 = "TF 2.7-2.11 wheels load libnvinfer.so.7 (tensorflow#53529, #57671, #57679; fixed in 2.12)"
_SRC_TRT_2_16 = "TF 2.16 wheel loads exactly libnvinfer.so.8.6.1 (tensorflow#64809)"
# What a TF wheel links for TF-TRT, where it is narrower than what a source build accepts.
_WHEEL_TRT_7 = {"min": "7.0", "max": "7.2", "default": "7.2.3", "links": "libnvinfer.so.7", "source": _SRC_TRT_SO7}
_WHEEL_TRT_2_16 = {
    "min": "8.6.1",
    "max": "8.6.1",
    "default": "8.6.1",
    "links": "libnvinfer.so.8.6.1",
    "source": _SRC_TRT_2_16,
}
# configure.py's _TF_MIN/_TF_MAX_BAZEL_VERSION of r2.6-r2.8 could not be read from the release branches (Spack
# transcribes 3.7.2-3.99.0, 3.7.2-4.99.0, 4.2.1-4.99.0), so those rows accept exactly the tested Bazel.
_SRC_BAZEL_EXACT = "bazel_range left out: exactly the tested Bazel of the tested build configurations"
# The 2.20.0 source tree's .bazelrc sets `build --repo_env=USE_PYWRAP_RULES=True` for every build: Arch Linux's
# tensorflow PKGBUILD for 2.20.0 deletes exactly that line from tensorflow-2.20.0/.bazelrc; the plan passes the
# same value explicitly so a user .bazelrc cannot drop it.
_SRC_PYWRAP = "USE_PYWRAP_RULES=True from the 2.20.0 .bazelrc (Arch Linux tensorflow PKGBUILD 2.20.0 removes that line)"
_SRC_WHEEL_CC_2_17 = "TF 2.17 release notes: wheels drop CC 5.x, add 8.9 (sm_60,sm_70,sm_80,sm_89,compute_90)"
_SRC_WHEEL_CC_OLD = "TF release .bazelrc TF_CUDA_COMPUTE_CAPABILITIES as used by public build scripts [U]"

# Build eras of the TensorFlow source tree (see REFERENCE section 2).
#   configure_gcc:   configure.py, local CUDA, nvcc with a GCC host compiler.
#   configure_clang: configure.py, local CUDA, Clang compiles CUDA (TF_CUDA_CLANG=1).
#   hermetic_cuda:   configure.py, Bazel fetches CUDA/cuDNN/NCCL redistributables (HERMETIC_*).
ERAS: Dict[str, Dict[str, Any]] = {
    "configure_gcc": {
        "local_cuda": True,
        "compiler_family": "gcc",
        "source": "tensorflow configure.py (TF_CUDA_VERSION, TF_CUDA_PATHS, GCC_HOST_COMPILER_PATH)",
    },
    "configure_clang": {
        "local_cuda": True,
        "compiler_family": "clang",
        "source": "tensorflow configure.py (TF_NEED_CLANG, TF_CUDA_CLANG, CLANG_CUDA_COMPILER_PATH); "
        "Clang default for Linux GPU builds since mid-2023",
    },
    "hermetic_cuda": {
        "local_cuda": False,
        "compiler_family": "clang",
        "source": "google-ml-infra/rules_ml_toolchain gpu/README.md (HERMETIC_CUDA_VERSION, LOCAL_CUDA_PATH)",
    },
}

# How the GPU wheel gets CUDA: "system" = loads the host toolkit (libcudart.so.11.0),
# "pinned" = the and-cuda extra pins exact nvidia-*-cu* wheels, "range" = and-cuda allows a range.
TENSORFLOW: List[Dict[str, Any]] = [
    {
        "version": "2.6",
        "python": ["3.6", "3.9"],
        "compiler": {"family": "gcc", "version": "7.3.1"},
        "bazel": "3.7.2",
        "bazel_range": None,
        "cuda": "11.2",
        "cudnn": "8.1.0",
        "numpy": ">=1.19.2,<1.20",
        "era": "configure_gcc",
        "wheel_target": "//tensorflow/tools/pip_package:build_pip_package",
        "bazel_flags": [],
        "wheel_cuda": "system",
        "wheel_compute_capabilities": ["sm_35", "sm_50", "sm_60", "sm_70", "sm_75", "compute_80"],
        "tensorrt": {"min": "7.0", "max": "7.2", "default": "7.2.3"},
        "source": _SRC_TF_TESTED + "; numpy~=1.19.2 from PyPI 2.6.0; " + _SRC_BAZEL_EXACT + "; " + _SRC_TRT,
    },
    {
        "version": "2.7",
        "python": ["3.7", "3.9"],
        "compiler": {"family": "gcc", "version": "7.3.1"},
        "bazel": "3.7.2",
        "bazel_range": None,
        "cuda": "11.2",
        "cudnn": "8.1.0",
        "numpy": ">=1.14.5,<2",
        "era": "configure_gcc",
        "wheel_target": "//tensorflow/tools/pip_package:build_pip_package",
        "bazel_flags": [],
        "wheel_cuda": "system",
        "wheel_compute_capabilities": ["sm_35", "sm_50", "sm_60", "sm_70", "sm_75", "compute_80"],
        "tensorrt": {"min": "7.0", "max": "8.6", "default": "8.6.1"},
        "wheel_tensorrt": _WHEEL_TRT_7,
        "source": _SRC_TF_TESTED + "; " + _SRC_SPACK_TF + "; " + _SRC_BAZEL_EXACT + "; " + _SRC_TRT,
    },
    {
        "version": "2.8",
        "python": ["3.7", "3.10"],
        "compiler": {"family": "gcc", "version": "7.3.1"},
        "bazel": "4.2.1",
        "bazel_range": None,
        "cuda": "11.2",
        "cudnn": "8.1.0",
        "numpy": ">=1.20,<2",
        "era": "configure_gcc",
        "wheel_target": "//tensorflow/tools/pip_package:build_pip_package",
        "bazel_flags": [],
        "wheel_cuda": "system",
        "wheel_compute_capabilities": ["sm_35", "sm_50", "sm_60", "sm_70", "sm_75", "compute_80"],
        "tensorrt": {"min": "7.0", "max": "8.6", "default": "8.6.1"},
        "wheel_tensorrt": _WHEEL_TRT_7,
        "source": _SRC_TF_TESTED + "; " + _SRC_SPACK_TF + "; " + _SRC_BAZEL_EXACT + "; " + _SRC_TRT,
    },
    {
        "version": "2.9",
        "python": ["3.7", "3.10"],
        "compiler": {"family": "gcc", "version": "9.3.1"},
        "bazel": "5.0.0",
        "bazel_range": ["4.2.2", "5.99.0"],
        "cuda": "11.2",
        "cudnn": "8.1.0",
        "numpy": ">=1.20,<2",
        "era": "configure_gcc",
        "wheel_target": "//tensorflow/tools/pip_package:build_pip_package",
        "bazel_flags": [],
        "wheel_cuda": "system",
        "wheel_compute_capabilities": ["sm_35", "sm_50", "sm_60", "sm_70", "sm_75", "compute_80"],
        "tensorrt": {"min": "7.0", "max": "8.6", "default": "8.6.1"},
        "wheel_tensorrt": _WHEEL_TRT_7,
        "source": _SRC_TF_TESTED + "; " + _SRC_SPACK_TF + "; configure.py _TF_MIN/_TF_MAX_BAZEL_VERSION; " + _SRC_TRT,
    },
    {
        "version": "2.10",
        "python": ["3.7", "3.10"],
        "compiler": {"family": "gcc", "version": "9.3.1"},
        "bazel": "5.1.1",
        "bazel_range": None,
        "cuda": "11.2",
        "cudnn": "8.1.0",
        "numpy": ">=1.20,<2",
        "era": "configure_gcc",
        "wheel_target": "//tensorflow/tools/pip_package:build_pip_package",
        "bazel_flags": [],
        "wheel_cuda": "system",
        "wheel_compute_capabilities": ["sm_35", "sm_50", "sm_60", "sm_70", "sm_75", "compute_80"],
        "tensorrt": {"min": "7.0", "max": "8.6", "default": "8.6.1"},
        "wheel_tensorrt": _WHEEL_TRT_7,
        "source": _SRC_TF_TESTED + "; " + _SRC_SPACK_TF + "; " + _SRC_TRT,
    },
    {
        "version": "2.11",
        "python": ["3.7", "3.10"],
        "compiler": {"family": "gcc", "version": "9.3.1"},
        "bazel": "5.3.0",
        "bazel_range": None,
        "cuda": "11.2",
        "cudnn": "8.1.0",
        "numpy": ">=1.20,<2",
        "era": "configure_gcc",
        "wheel_target": "//tensorflow/tools/pip_package:build_pip_package",
        "bazel_flags": [],
        "wheel_cuda": "system",
        "wheel_compute_capabilities": ["sm_35", "sm_50", "sm_60", "sm_70", "sm_75", "compute_80"],
        "tensorrt": {"min": "7.0", "max": "8.6", "default": "8.6.1"},
        "wheel_tensorrt": _WHEEL_TRT_7,
        "source": _SRC_TF_TESTED + "; " + _SRC_SPACK_TF + "; " + _SRC_TRT,
    },
    {
        "version": "2.12",
        "python": ["3.8", "3.11"],
        "compiler": {"family": "gcc", "version": "9.3.1"},
        "bazel": "5.3.0",
        "bazel_range": None,
        "cuda": "11.8",
        "cudnn": "8.6.0",
        "numpy": ">=1.22,<1.24",
        "era": "configure_gcc",
        "wheel_target": "//tensorflow/tools/pip_package:build_pip_package",
        "bazel_flags": [],
        "wheel_cuda": "system",
        "wheel_compute_capabilities": ["sm_35", "sm_50", "sm_60", "sm_70", "sm_75", "compute_80"],
        "tensorrt": {"min": "7.0", "max": "8.6", "default": "8.6.1"},
        "source": _SRC_TF_TESTED + "; " + _SRC_SPACK_TF + "; " + _SRC_WHEEL_CC_OLD + "; " + _SRC_TRT,
    },
    {
        "version": "2.13",
        "python": ["3.8", "3.11"],
        "compiler": {"family": "clang", "version": "16.0.0"},
        "bazel": "5.3.0",
        "bazel_range": None,
        "cuda": "11.8",
        "cudnn": "8.6.0",
        "numpy": ">=1.22,<=1.24.3",
        "era": "configure_clang",
        "wheel_target": "//tensorflow/tools/pip_package:build_pip_package",
        "bazel_flags": [],
        "wheel_cuda": "system",
        "wheel_compute_capabilities": ["sm_35", "sm_50", "sm_60", "sm_70", "sm_75", "compute_80"],
        "tensorrt": {"min": "7.0", "max": "8.6", "default": "8.6.1"},
        "source": _SRC_TF_TESTED + "; " + _SRC_SPACK_TF + "; " + _SRC_WHEEL_CC_OLD + "; " + _SRC_TRT,
    },
    {
        "version": "2.14",
        "python": ["3.9", "3.11"],
        "compiler": {"family": "clang", "version": "16.0.0"},
        "bazel": "6.1.0",
        "bazel_range": None,
        "cuda": "11.8",
        "cudnn": "8.7.0",
        "numpy": ">=1.23.5,<2",
        "era": "configure_clang",
        "wheel_target": "//tensorflow/tools/pip_package:build_pip_package",
        "bazel_flags": [],
        "wheel_cuda": "pinned",
        "wheel_compute_capabilities": ["sm_35", "sm_50", "sm_60", "sm_70", "sm_75", "compute_80"],
        "tensorrt": {"min": "8.0", "max": "8.6", "default": "8.5.3"},
        "source": _SRC_TF_TESTED
        + "; "
        + _SRC_PYPI.format("2.14.0")
        + " (nvidia-cudnn-cu11==8.7.0.84, tensorrt==8.5.3.1); "
        + _SRC_WHEEL_CC_OLD,
    },
    {
        "version": "2.15",
        "python": ["3.9", "3.11"],
        "compiler": {"family": "clang", "version": "16.0.0"},
        "bazel": "6.1.0",
        "bazel_range": None,
        "cuda": "12.2",
        "cudnn": "8.9.4",
        "numpy": ">=1.23.5,<2",
        "era": "configure_clang",
        "wheel_target": "//tensorflow/tools/pip_package:build_pip_package",
        "bazel_flags": [],
        "wheel_cuda": "pinned",
        "wheel_compute_capabilities": ["sm_50", "sm_60", "sm_70", "sm_80", "compute_90"],
        "tensorrt": {"min": "8.0", "max": "8.6", "default": "8.6.1"},
        "source": _SRC_TF_TESTED
        + "; "
        + _SRC_PYPI.format("2.15.0")
        + " (nvidia-cudnn-cu12==8.9.4.25, tensorrt==8.6.1); "
        + _SRC_WHEEL_CC_OLD,
    },
    {
        "version": "2.16",
        "python": ["3.9", "3.12"],
        "compiler": {"family": "clang", "version": "17.0.6"},
        "bazel": "6.5.0",
        "bazel_range": None,
        "cuda": "12.3",
        "cudnn": "8.9.7",
        "numpy": ">=1.23.5,<2",
        "numpy_by_python": {"3.12": ">=1.26.0,<2"},
        "era": "configure_clang",
        "wheel_target": "//tensorflow/tools/pip_package:build_pip_package",
        "bazel_flags": [],
        "wheel_cuda": "pinned",
        "wheel_compute_capabilities": ["sm_50", "sm_60", "sm_70", "sm_80", "compute_90"],
        "tensorrt": {"min": "8.0", "max": "8.6", "default": "8.6.1"},
        "wheel_tensorrt": _WHEEL_TRT_2_16,
        "source": _SRC_TF_TESTED
        + "; "
        + _SRC_PYPI.format("2.16.1")
        + " (nvidia-cudnn-cu12==8.9.7.29); v2 target //tensorflow/tools/pip_package/v2:wheel also exists; "
        + _SRC_WHEEL_CC_OLD
        + "; "
        + _SRC_TRT,
    },
    {
        "version": "2.17",
        "python": ["3.9", "3.12"],
        "compiler": {"family": "clang", "version": "17.0.6"},
        "bazel": "6.5.0",
        "bazel_range": None,
        "cuda": "12.3",
        "cudnn": "8.9.7",
        "numpy": ">=1.23.5,<2",
        "numpy_by_python": {"3.12": ">=1.26.0,<2"},
        "era": "configure_clang",
        "wheel_target": "//tensorflow/tools/pip_package:wheel",
        "bazel_flags": ["--repo_env=WHEEL_NAME={wheel_name}"],
        "wheel_cuda": "pinned",
        "wheel_compute_capabilities": ["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"],
        "tensorrt": {"min": "8.0", "max": "8.6", "default": "8.6.1"},
        "source": _SRC_TF_TESTED
        + "; "
        + _SRC_PYPI.format("2.17.0")
        + " (nvidia-cudnn-cu12==8.9.7.29); "
        + _SRC_WHEEL_CC_2_17
        + "; "
        + _SRC_TRT,
    },
    {
        "version": "2.18",
        "python": ["3.9", "3.12"],
        "compiler": {"family": "clang", "version": "17.0.6"},
        "bazel": "6.5.0",
        "bazel_range": None,
        "cuda": "12.5",
        "cudnn": "9.3.0",
        "numpy": ">=1.26.0,<2.1.0",
        "era": "hermetic_cuda",
        "wheel_target": "//tensorflow/tools/pip_package:wheel",
        "bazel_flags": ["--repo_env=WHEEL_NAME={wheel_name}", "--config=cuda_wheel"],
        "wheel_cuda": "pinned",
        "wheel_compute_capabilities": ["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"],
        "tensorrt": None,
        "source": _SRC_TF_TESTED
        + "; "
        + _SRC_PYPI.format("2.18.0")
        + " (nvidia-cuda-runtime-cu12==12.5.82, nvidia-cudnn-cu12==9.3.0.75); "
        + "2.18 release notes: TensorRT support is disabled in CUDA builds; first release built against NumPy 2.0",
    },
    {
        "version": "2.19",
        "python": ["3.9", "3.12"],
        "compiler": {"family": "clang", "version": "18.1.8"},
        "bazel": "6.5.0",
        "bazel_range": None,
        "cuda": "12.5",
        "cudnn": "9.3.0",
        "numpy": ">=1.26.0,<2.2.0",
        "era": "hermetic_cuda",
        "wheel_target": "//tensorflow/tools/pip_package:wheel",
        "bazel_flags": ["--repo_env=WHEEL_NAME={wheel_name}", "--config=cuda_wheel"],
        "wheel_cuda": "pinned",
        "wheel_compute_capabilities": ["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"],
        "tensorrt": None,
        "source": _SRC_TF_TESTED + "; " + _SRC_PYPI.format("2.19.0") + " (numpy<2.2.0,>=1.26.0)",
    },
    {
        "version": "2.20",
        "python": ["3.9", "3.13"],
        "compiler": {"family": "clang", "version": "18.1.8"},
        "bazel": "7.4.1",
        "bazel_range": None,
        "cuda": "12.5",
        "cudnn": "9.3.0",
        "numpy": ">=1.26.0",
        "era": "hermetic_cuda",
        "wheel_target": "//tensorflow/tools/pip_package:wheel",
        "bazel_flags": [
            "--repo_env=WHEEL_NAME={wheel_name}",
            "--config=cuda_wheel",
            "--repo_env=USE_PYWRAP_RULES=True",
        ],
        "wheel_cuda": "range",
        "wheel_compute_capabilities": ["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"],
        "tensorrt": None,
        "source": _SRC_TF_TESTED
        + "; "
        + _SRC_PYPI.format("2.20.0")
        + " (nvidia-*-cu12<13.0,>=12.5.82, nvidia-cudnn-cu12<10.0,>=9.3.0.75); "
        + _SRC_PYWRAP,
    },
    {
        "version": "2.21",
        "python": ["3.10", "3.13"],
        "compiler": {"family": "clang", "version": "18.1.8"},
        "bazel": "7.4.1",
        "bazel_range": None,
        "cuda": "12.5",
        "cudnn": "9.3.0",
        "numpy": ">=1.26.0",
        "era": "hermetic_cuda",
        "wheel_target": "//tensorflow/tools/pip_package:wheel",
        "bazel_flags": [
            "--repo_env=WHEEL_NAME={wheel_name}",
            "--config=cuda_wheel",
            "--repo_env=USE_PYWRAP_RULES=True",
        ],
        "wheel_cuda": "range",
        "wheel_compute_capabilities": ["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"],
        "tensorrt": None,
        "source": _SRC_TF_TESTED
        + "; "
        + _SRC_PYPI.format("2.21.0")
        + " (Requires-Python >=3.10, numpy>=1.26.0, nvidia-*-cu12<13.0); "
        + "USE_PYWRAP_RULES=True as for 2.20 [U] (the 2.21 .bazelrc was not read; the flag is inert if unused)",
    },
]

_SRC_CUDA_NOTES = "NVIDIA CUDA Toolkit release notes, Table 3 (toolkit driver version, Linux)"
_SRC_CUDA_ARCH = "NVIDIA CUDA release notes / nvcc --list-gpu-arch"

# CUDA toolkits: the GA release's driver floor (driver_min) and the floor with minor-version
# compatibility, the range of real architectures nvcc can target, the newest GCC nvcc accepts as
# host compiler, and the last update release (full, used as the hermetic version) with its own,
# higher floor (full_driver_min): Table 3 lists one floor per GA and per update.
CUDA: List[Dict[str, Any]] = [
    {
        "version": "11.0",
        "full": "11.0.3",
        "driver_min": "450.51.05",
        "full_driver_min": "450.51.06",
        "driver_min_compat": "450.51.05",
        "min_sm": "3.5",
        "max_sm": "8.0",
        "gcc_max": "9",
        "source": _SRC_CUDA_NOTES + "; " + _SRC_CUDA_ARCH + " (11.0 adds sm_80, drops sm_30)",
    },
    {
        "version": "11.1",
        "full": "11.1.1",
        "driver_min": "455.23",
        "full_driver_min": "455.32",
        "driver_min_compat": "450.80.02",
        "min_sm": "3.5",
        "max_sm": "8.6",
        "gcc_max": "10",
        "source": _SRC_CUDA_NOTES + "; " + _SRC_CUDA_ARCH + " (11.1 adds sm_86, tensorflow#45590)",
    },
    {
        "version": "11.2",
        "full": "11.2.2",
        "driver_min": "460.27.03",
        "full_driver_min": "460.32.03",
        "driver_min_compat": "450.80.02",
        "min_sm": "3.5",
        "max_sm": "8.6",
        "gcc_max": "10",
        "source": _SRC_CUDA_NOTES + "; " + _SRC_CUDA_ARCH,
    },
    {
        "version": "11.3",
        "full": "11.3.1",
        "driver_min": "465.19.01",
        "full_driver_min": "465.19.01",
        "driver_min_compat": "450.80.02",
        "min_sm": "3.5",
        "max_sm": "8.6",
        "gcc_max": "10",
        "source": _SRC_CUDA_NOTES + "; " + _SRC_CUDA_ARCH,
    },
    {
        "version": "11.4",
        "full": "11.4.4",
        "driver_min": "470.42.01",
        "full_driver_min": "470.82.01",
        "driver_min_compat": "450.80.02",
        "min_sm": "3.5",
        "max_sm": "8.7",
        "gcc_max": "11",
        "source": _SRC_CUDA_NOTES + "; " + _SRC_CUDA_ARCH + " (sm_87 Orin)",
    },
    {
        "version": "11.5",
        "full": "11.5.2",
        "driver_min": "495.29.05",
        "full_driver_min": "495.29.05",
        "driver_min_compat": "450.80.02",
        "min_sm": "3.5",
        "max_sm": "8.7",
        "gcc_max": "11",
        "source": _SRC_CUDA_NOTES + "; " + _SRC_CUDA_ARCH,
    },
    {
        "version": "11.6",
        "full": "11.6.2",
        "driver_min": "510.39.01",
        "full_driver_min": "510.47.03",
        "driver_min_compat": "450.80.02",
        "min_sm": "3.5",
        "max_sm": "8.7",
        "gcc_max": "11",
        "source": _SRC_CUDA_NOTES + "; " + _SRC_CUDA_ARCH,
    },
    {
        "version": "11.7",
        "full": "11.7.1",
        "driver_min": "515.43.04",
        "full_driver_min": "515.48.07",
        "driver_min_compat": "450.80.02",
        "min_sm": "3.5",
        "max_sm": "8.7",
        "gcc_max": "11",
        "source": _SRC_CUDA_NOTES + "; " + _SRC_CUDA_ARCH,
    },
    {
        "version": "11.8",
        "full": "11.8.0",
        "driver_min": "520.61.05",
        "full_driver_min": "520.61.05",
        "driver_min_compat": "450.80.02",
        "min_sm": "3.5",
        "max_sm": "9.0",
        "gcc_max": "11",
        "source": _SRC_CUDA_NOTES + "; " + _SRC_CUDA_ARCH + " (11.8 adds sm_89 and sm_90)",
    },
    {
        "version": "12.0",
        "full": "12.0.1",
        "driver_min": "525.60.13",
        "full_driver_min": "525.85.12",
        "driver_min_compat": "525.60.13",
        "min_sm": "5.0",
        "max_sm": "9.0",
        "gcc_max": "12",
        "source": _SRC_CUDA_NOTES + "; " + _SRC_CUDA_ARCH + " (12.0 drops sm_35/sm_37)",
    },
    {
        "version": "12.1",
        "full": "12.1.1",
        "driver_min": "530.30.02",
        "full_driver_min": "530.30.02",
        "driver_min_compat": "525.60.13",
        "min_sm": "5.0",
        "max_sm": "9.0",
        "gcc_max": "12",
        "source": _SRC_CUDA_NOTES + "; " + _SRC_CUDA_ARCH,
    },
    {
        "version": "12.2",
        "full": "12.2.2",
        "driver_min": "535.54.03",
        "full_driver_min": "535.104.05",
        "driver_min_compat": "525.60.13",
        "min_sm": "5.0",
        "max_sm": "9.0",
        "gcc_max": "12",
        "source": _SRC_CUDA_NOTES + "; " + _SRC_CUDA_ARCH,
    },
    {
        "version": "12.3",
        "full": "12.3.2",
        "driver_min": "545.23.06",
        "full_driver_min": "545.23.08",
        "driver_min_compat": "525.60.13",
        "min_sm": "5.0",
        "max_sm": "9.0",
        "gcc_max": "12",
        "source": _SRC_CUDA_NOTES
        + " (Table 3 lists 12.3 Update 1 at 545.23.08 and no Update 2); NVIDIA's 12.3.2 runfile is "
        "cuda_12.3.2_545.23.08_linux.run, bundling driver 545.23.08 (runfile names carry Table 3's update floor: "
        "12.2.2 at 535.104.05, 12.4.1 at 550.54.15); " + _SRC_CUDA_ARCH,
    },
    {
        "version": "12.4",
        "full": "12.4.1",
        "driver_min": "550.54.14",
        "full_driver_min": "550.54.15",
        "driver_min_compat": "525.60.13",
        "min_sm": "5.0",
        "max_sm": "9.0",
        "gcc_max": "13",
        "source": _SRC_CUDA_NOTES + "; " + _SRC_CUDA_ARCH,
    },
    {
        "version": "12.5",
        "full": "12.5.1",
        "driver_min": "555.42.02",
        "full_driver_min": "555.42.06",
        "driver_min_compat": "525.60.13",
        "min_sm": "5.0",
        "max_sm": "9.0",
        "gcc_max": "13",
        "source": _SRC_CUDA_NOTES + "; " + _SRC_CUDA_ARCH + " (hermetic 12.5 cannot target sm_120, tensorflow#88029)",
    },
    {
        "version": "12.6",
        "full": "12.6.3",
        "driver_min": "560.28.03",
        "full_driver_min": "560.35.05",
        "driver_min_compat": "525.60.13",
        "min_sm": "5.0",
        "max_sm": "9.0",
        "gcc_max": "13",
        "source": _SRC_CUDA_NOTES + "; " + _SRC_CUDA_ARCH,
    },
    {
        "version": "12.8",
        "full": "12.8.1",
        "driver_min": "570.26",
        "full_driver_min": "570.124.06",
        "driver_min_compat": "525.60.13",
        "min_sm": "5.0",
        "max_sm": "12.0",
        "gcc_max": "14",
        "source": _SRC_CUDA_NOTES + "; " + _SRC_CUDA_ARCH + " (12.8 adds Blackwell sm_100/sm_120)",
    },
    {
        "version": "12.9",
        "full": "12.9.1",
        "driver_min": "575.51.03",
        "full_driver_min": "575.57.08",
        "driver_min_compat": "525.60.13",
        "min_sm": "5.0",
        "max_sm": "12.1",
        "gcc_max": "14",
        "source": _SRC_CUDA_NOTES
        + "; NVIDIA CUDA Features Archive 12.9.1 (12.9 adds compiler targets sm_103/sm_103f/sm_103a and sm_121)",
    },
    {
        "version": "13.0",
        "full": "13.0.2",
        "driver_min": "580.65.06",
        "full_driver_min": "580.95.05",
        "driver_min_compat": "580.65.06",
        "min_sm": "7.5",
        "max_sm": "12.1",
        "gcc_max": "15",
        "source": _SRC_CUDA_NOTES + "; " + _SRC_CUDA_ARCH + " (13.0 drops sm_50-sm_72); gcc_max [U]",
    },
    {
        "version": "13.1",
        "full": "13.1.0",
        "driver_min": "590.44.01",
        "full_driver_min": "590.44.01",
        "driver_min_compat": "580.65.06",
        "min_sm": "7.5",
        "max_sm": "12.1",
        "gcc_max": "15",
        "source": _SRC_CUDA_NOTES + "; " + _SRC_CUDA_ARCH + " [U]",
    },
]

_SRC_CUDNN = "NVIDIA cuDNN support matrix / release notes"
_SRC_CUDNN_SM = "NVIDIA cuDNN {} support matrix (compute capabilities listed per CUDA build)"

# cuDNN releases the matrix uses, with the CUDA range each build supports. sm_max lists
# [cuda_min, highest compute capability] pairs: the builds for CUDA >= cuda_min list GPUs up to
# that capability; a row without sm_max is not checked against GPUs (its matrix says "SM 3.5 and later").
CUDNN: List[Dict[str, Any]] = [
    {
        "version": "8.1.0",
        "cuda_min": "11.0",
        "cuda_max": "11.2",
        "source": "NVIDIA developer forum 'cuDNN version dependency on CUDART version' (cuDNN 8.1 ships one binary "
        "for every CUDA 11 minor, reporting CUDART 11.2; a cuDNN engineer: CUDART is linked statically and the "
        "driver requirement is relaxed since 8.1.0); " + _SRC_TF_TESTED + " (TF 2.6-2.10: cuDNN 8.1 with CUDA 11.2)",
    },
    {
        "version": "8.6.0",
        "cuda_min": "11.8",
        "cuda_max": "11.8",
        "source": _SRC_TF_TESTED + " (TF 2.12/2.13: cuDNN 8.6 with CUDA 11.8); the 8.6.0 support matrix was not "
        "found, so its older CUDA 11 minors are left out (cuDNN 8.7.0 or 8.9.x cover CUDA 11.0-11.8)",
    },
    {
        "version": "8.7.0",
        "cuda_min": "11.0",
        "cuda_max": "11.8",
        "source": _SRC_CUDNN + "; PyPI nvidia-cudnn-cu11 8.7.0.84",
    },
    {
        "version": "8.9.4",
        "cuda_min": "11.0",
        "cuda_max": "12.2",
        "source": _SRC_CUDNN + "; PyPI nvidia-cudnn-cu12 8.9.4.25",
    },
    {
        "version": "8.9.7",
        "cuda_min": "11.0",
        "cuda_max": "12.3",
        "sm_max": [["11.0", "9.0"]],
        "source": _SRC_CUDNN_SM.format("8.9.6 (8.9.7 assumed alike)") + "; PyPI nvidia-cudnn-cu12 8.9.7.29",
    },
    {
        "version": "9.3.0",
        "cuda_min": "11.8",
        "cuda_max": "12.6",
        "sm_max": [["11.8", "9.0"]],
        "source": _SRC_CUDNN_SM.format("9.0-9.5.1 (Hopper the newest listed)") + "; PyPI nvidia-cudnn-cu12 9.3.0.75",
    },
    {
        "version": "9.8.0",
        "cuda_min": "12.0",
        "cuda_max": "12.8",
        "sm_max": [["12.0", "9.0"], ["12.8", "12.0"]],
        "source": _SRC_CUDNN
        + "; Blackwell from 9.7.0 (NVIDIA/cudnn-frontend v1.10 release notes, NVIDIA/TransformerEngine#2775); "
        + "CUDA 12 build for 12.0-12.8 (nixpkgs cuda-modules/cudnn/releases.nix, 9.8.0.87); the CUDA 11.8 build "
        "is left out (its matrix was not found; cuDNN 9.10.2 lists one)",
    },
    {
        "version": "9.10.2",
        "cuda_min": "11.8",
        "cuda_max": "12.9",
        "sm_max": [["11.8", "9.0"], ["12.8", "12.0"]],
        "source": _SRC_CUDNN_SM.format("9.10.2")
        + " (for CUDA 12.8/12.9: 5.0-10.0, 12.0; for CUDA 12.0-12.6 and 11.8: up to 9.0)",
    },
    {
        "version": "9.17.0",
        "cuda_min": "13.0",
        "cuda_max": "13.1",
        "sm_max": [["13.0", "12.0"]],
        "source": _SRC_CUDNN_SM.format("9.17.0")
        + " (cuDNN 9.17.0 for CUDA 13.x: CUDA 13.1 and 13.0, driver >= 580.65.06, compute capability 7.5-12.0; "
        "its CUDA 12.x build is left out here: it drops Volta and older, which this row cannot express); "
        "replaces 9.13.0, whose support matrix was not found",
    },
]

# Compiler/TensorFlow combinations known to fail. Bounds are inclusive; None = open.
COMPILER_CONFLICTS: List[Dict[str, Any]] = [
    {
        "family": "gcc",
        "compiler_min": "13",
        "compiler_max": None,
        "tf_min": None,
        "tf_max": "2.14",
        "source": _SRC_SPACK_TF + " (conflicts: %gcc@13: when @:2.14)",
    },
    {
        "family": "gcc",
        "compiler_min": None,
        "compiler_max": "11",
        "tf_min": "2.17",
        "tf_max": None,
        "source": _SRC_SPACK_TF + " (conflicts: %gcc@:11 when @2.17:)",
    },
    {
        "family": "gcc",
        "compiler_min": None,
        "compiler_max": "9.3.0",
        "tf_min": "2.9",
        "tf_max": None,
        "source": _SRC_SPACK_TF + " (conflicts: %gcc@:9.3.0 when @2.9:)",
    },
    {
        "family": "clang",
        "compiler_min": None,
        "compiler_max": "15",
        "tf_min": "2.18",
        "tf_max": None,
        "source": _SRC_SPACK_TF + "; tensorflow#76908",
    },
    {
        "family": "clang",
        "compiler_min": "17",
        "compiler_max": None,
        "tf_min": None,
        "tf_max": "2.14",
        "source": _SRC_SPACK_TF + "; tensorflow#62416",
    },
]

# Target operating systems: default Python and the compiler majors in the distribution's own archive.
OPERATING_SYSTEMS: List[Dict[str, Any]] = [
    {
        "id": "debian12",
        "python": "3.11",
        "gcc": ["11", "12"],
        "clang": ["13", "14", "15", "16"],
        "source": "Debian bookworm packages (python3 3.11, gcc-12 default, clang-14 default); gcc-11, clang-13 to 16 "
        "seen in bookworm main with apt-cache (clang-19 is there too, 1:19.1.7-3~deb12u1, and left out: newer than "
        "any Clang TensorFlow tested)",
    },
    {
        "id": "debian13",
        "python": "3.13",
        "gcc": ["12", "13", "14"],
        "clang": ["17", "18", "19"],
        "source": "Debian trixie packages (python3 3.13, gcc-14 default, clang-19 default) [U: older majors]",
    },
    {
        "id": "ubuntu2204",
        "python": "3.10",
        "gcc": ["9", "10", "11", "12"],
        "clang": ["11", "12", "13", "14", "15"],
        "source": "Ubuntu jammy packages (python3 3.10, gcc-11 default, clang-14 default)",
    },
    {
        "id": "ubuntu2404",
        "python": "3.12",
        "gcc": ["9", "10", "11", "12", "13", "14"],
        "clang": ["14", "15", "16", "17", "18"],
        "source": "Ubuntu noble packages (python3 3.12, gcc-13 default, clang-18 default)",
    },
    {
        "id": "rhel9",
        "python": "3.9",
        "gcc": ["11", "12", "13", "14"],
        "clang": ["19"],
        "source": "RHEL 9 AppStream (python3 3.9, gcc 11, gcc-toolset-12..14, rolling llvm-toolset) [U: clang major]",
    },
]


# Footprints used by preflight's disk and memory checks (GB).
RESOURCES: Dict[str, Any] = {
    "wheel_gpu_gb": 8,
    "wheel_cpu_gb": 2,
    "cuda_toolkit_gb": 6,
    "source_build_gb": 60,
    "ram_gb_per_bazel_job": 2,
    "source": "TF install docs (--local_ram_resources=2048 on small machines; OOM tensorflow#35051); "
    "wheel sizes from the Python index (tensorflow + nvidia-*-cu12 about 6 GB installed); build tree size [U]",
}


# NVSwitch systems. NVSwitch chips show on the host's PCI bus as NVIDIA (10de) bridge-class (0x0680) devices; the HGX
# B200/B100 baseboards' fourth-generation NVSwitches do not (the host sees them through the baseboard's ConnectX bridge
# functions), so those systems are known by their GPUs. Both need nvidia-fabricmanager at exactly the driver's version
# (CUDA init fails with error 802 without it); fourth-generation systems also need NVLSM (the NVLink subnet manager).
_SRC_FM_GUIDE = "NVIDIA Fabric Manager user guide, GPU baseboard topologies and installation (release 2.3, 2025-05)"
NVSWITCH_CLASS_PREFIX = "0680"
NVSWITCH_DEVICES: List[Dict[str, Any]] = [
    {
        "device_id": "1ac2",
        "generation": 1,
        "board": "HGX-2 (V100)",
        "source": _SRC_FM_GUIDE + "; " + _SRC_PCI_IDS + " [U]",
    },
    {"device_id": "1af1", "generation": 2, "board": "HGX A100", "source": _SRC_FM_GUIDE + "; " + _SRC_PCI_IDS},
    {
        "device_id": "22a3",
        "generation": 3,
        "board": "HGX H100/H200/H800/H20",
        "source": _SRC_FM_GUIDE + "; " + _SRC_PCI_IDS,
    },
]
# GPUs sold only on NVSwitch baseboards whose switches are not on the host's PCI bus (fourth generation).
NVSWITCH_GPUS: List[Dict[str, Any]] = [
    {
        "device_id": "2901",
        "generation": 4,
        "board": "HGX B200",
        "nvlsm": True,
        "source": _SRC_FM_GUIDE + " (HGX B200/B100 baseboard, NVLSM); 10de:2901 counted as an NVSwitch system by "
        "aws-parallelcluster-cookbook's fabric manager resource",
    },
]
# Package names: NVIDIA's CUDA repository (Debian/Ubuntu: nvidia-fabricmanager-<branch>, unversioned from branch 590 as
# the driver packages were renamed; EL: nvidia-fabric-manager), version = the driver's, plus nvlsm for generation 4.
FABRIC_MANAGER: Dict[str, Any] = {
    "apt_versioned_name": "nvidia-fabricmanager-{branch}",
    "apt_name": "nvidia-fabricmanager",
    "apt_unversioned_from_branch": 590,
    "dnf_name": "nvidia-fabric-manager",
    "nvlsm_package": "nvlsm",
    "service": "nvidia-fabricmanager",
    "source": _SRC_FM_GUIDE + "; NVIDIA driver installation guide, Ubuntu 590 package renames; "
    "Ubuntu package index (nvidia-fabricmanager-450 ... -590)",
}

# NVLink per GPU model for the multi-GPU checks: one-way GB/s per link and links per GPU (`nvidia-smi topo -m` shows
# NV<links> between two GPUs). PCIe pairs are judged by the link rate gpu_smoke uses (_verdict.link_gbs).
_SRC_NVLINK = "NVIDIA datasheets (NVLink bandwidth per GPU, both directions) and NVLink generation pages"
NVLINK: List[Dict[str, Any]] = [
    {"gpu": "Tesla V100-SXM2-16GB", "generation": 2, "link_gbs": 25.0, "links": 6, "source": _SRC_NVLINK},
    {"gpu": "NVIDIA A100-SXM4-40GB", "generation": 3, "link_gbs": 25.0, "links": 12, "source": _SRC_NVLINK},
    {"gpu": "NVIDIA A100-SXM4-80GB", "generation": 3, "link_gbs": 25.0, "links": 12, "source": _SRC_NVLINK},
    {"gpu": "NVIDIA H100 80GB HBM3", "generation": 4, "link_gbs": 25.0, "links": 18, "source": _SRC_NVLINK},
    {"gpu": "NVIDIA H200", "generation": 4, "link_gbs": 25.0, "links": 18, "source": _SRC_NVLINK},
    {
        "gpu": "NVIDIA H100 NVL",
        "generation": 4,
        "link_gbs": 25.0,
        "links": 12,
        "source": _SRC_NVLINK + " (600 GB/s NVLink bridge) [U]",
    },
    {"gpu": "NVIDIA B200", "generation": 5, "link_gbs": 50.0, "links": 18, "source": _SRC_NVLINK},
]
# Suggested verdicts for the multi-GPU checks, as fractions of the link's one-way rate: a P2P copy between two GPUs,
# and the all-reduce bus bandwidth (nccl-tests' busbw; NVLS/SHARP reduction on NVSwitch can exceed the one-way rate).
MULTI_GPU_THRESHOLDS: Dict[str, Any] = {
    "p2p_pass": 0.70,
    "p2p_warn": 0.50,
    "allreduce_pass": 0.60,
    "allreduce_warn": 0.40,
    "source": "nccl-tests busbw definition; CUDA samples p2pBandwidthLatencyTest; thresholds suggested [U]",
}

# MIG profiles per GPU model: name -> (compute slices of 7, memory eighths, most instances). The GPU itself has the last
# word (`nvidia-smi mig -lgip`); a layout is refused first against this table.
_SRC_MIG = "NVIDIA MIG user guide, Supported MIG Profiles (docs.nvidia.com/datacenter/tesla/mig-user-guide)"
MIG_PROFILES: List[Dict[str, Any]] = [
    {
        "gpu": "NVIDIA A30",
        "slices": 4,
        "memory_slices": 4,
        "source": _SRC_MIG,
        "profiles": {
            "1g.6gb": [1, 1, 4],
            "1g.6gb+me": [1, 1, 1],
            "2g.12gb": [2, 2, 2],
            "2g.12gb+me": [2, 2, 1],
            "4g.24gb": [4, 4, 1],
        },
    },
    {
        "gpu": "NVIDIA A100-SXM4-40GB",
        "aliases": ["NVIDIA A100-PCIE-40GB"],
        "slices": 7,
        "memory_slices": 8,
        "source": _SRC_MIG,
        "profiles": {
            "1g.5gb": [1, 1, 7],
            "1g.5gb+me": [1, 1, 1],
            "1g.10gb": [1, 2, 4],
            "2g.10gb": [2, 2, 3],
            "3g.20gb": [3, 4, 2],
            "4g.20gb": [4, 4, 1],
            "7g.40gb": [7, 8, 1],
        },
    },
    {
        "gpu": "NVIDIA A100-SXM4-80GB",
        "aliases": ["NVIDIA A100 80GB PCIe"],
        "slices": 7,
        "memory_slices": 8,
        "source": _SRC_MIG,
        "profiles": {
            "1g.10gb": [1, 1, 7],
            "1g.10gb+me": [1, 1, 1],
            "1g.20gb": [1, 2, 4],
            "2g.20gb": [2, 2, 3],
            "3g.40gb": [3, 4, 2],
            "4g.40gb": [4, 4, 1],
            "7g.80gb": [7, 8, 1],
        },
    },
    {
        "gpu": "NVIDIA H100 80GB HBM3",
        "aliases": ["NVIDIA H100 PCIe"],
        "slices": 7,
        "memory_slices": 8,
        "source": _SRC_MIG,
        "profiles": {
            "1g.10gb": [1, 1, 7],
            "1g.10gb+me": [1, 1, 1],
            "1g.20gb": [1, 2, 4],
            "2g.20gb": [2, 2, 3],
            "3g.40gb": [3, 4, 2],
            "4g.40gb": [4, 4, 1],
            "7g.80gb": [7, 8, 1],
        },
    },
    {
        "gpu": "NVIDIA H200",
        "slices": 7,
        "memory_slices": 8,
        "source": _SRC_MIG,
        "profiles": {
            "1g.18gb": [1, 1, 7],
            "1g.18gb+me": [1, 1, 1],
            "1g.35gb": [1, 2, 4],
            "2g.35gb": [2, 2, 3],
            "3g.71gb": [3, 4, 2],
            "4g.71gb": [4, 4, 1],
            "7g.141gb": [7, 8, 1],
        },
    },
    {
        "gpu": "NVIDIA B200",
        "slices": 7,
        "memory_slices": 8,
        "source": _SRC_MIG + " [U: B200 profile names as listed for p6-b200 by aws/sagemaker-hyperpod-cli]",
        "profiles": {
            "1g.23gb": [1, 1, 7],
            "1g.45gb": [1, 2, 4],
            "2g.45gb": [2, 2, 3],
            "3g.90gb": [3, 4, 2],
            "4g.90gb": [4, 4, 1],
            "7g.180gb": [7, 8, 1],
        },
    },
]


def tensorflow_row(version: str, rows: Optional[List[Dict[str, Any]]] = None) -> Optional[Dict[str, Any]]:
    """Return the TensorFlow row for an exact version key, or None."""
    return _by_key(TENSORFLOW if rows is None else rows, "version", version)


def cuda_row(version: str, rows: Optional[List[Dict[str, Any]]] = None) -> Optional[Dict[str, Any]]:
    """Return the CUDA row for a major.minor version, or None."""
    return _by_key(CUDA if rows is None else rows, "version", version)


def os_row(os_id: str, rows: Optional[List[Dict[str, Any]]] = None) -> Optional[Dict[str, Any]]:
    """Return the operating-system row for an id such as debian12, or None."""
    return _by_key(OPERATING_SYSTEMS if rows is None else rows, "id", os_id)


def _by_key(rows: List[Dict[str, Any]], key: str, value: str) -> Optional[Dict[str, Any]]:
    for row in rows:
        if row.get(key) == value:
            return row
    return None


def _norm_pci_id(value: str) -> str:
    text = str(value).strip().lower()
    if text.startswith("0x"):
        text = text[2:]
    text = text.replace(":", "")
    if len(text) == 8 and text.startswith("10de"):
        text = text[4:]
    return text


def find_gpu(
    pci_device_id: Optional[str] = None,
    name: Optional[str] = None,
    gpus: Optional[List[Dict[str, Any]]] = None,
) -> Optional[Dict[str, Any]]:
    """Return the GPU row matching a PCI device id or a name/alias (case-insensitive), or None."""
    rows = GPUS if gpus is None else gpus
    if pci_device_id:
        wanted = _norm_pci_id(pci_device_id)
        for row in rows:
            if wanted in [_norm_pci_id(i) for i in row.get("pci_device_ids", [])]:
                return row
    if name:
        wanted_name = " ".join(str(name).split()).lower()
        for row in rows:
            names = [row.get("name", ""), *row.get("aliases", [])]
            if wanted_name in [" ".join(str(n).split()).lower() for n in names]:
                return row
    return None
