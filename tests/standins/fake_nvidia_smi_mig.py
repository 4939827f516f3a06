#!/usr/bin/env python3
"""Test stand-in for nvidia-smi's MIG commands (no GPU is reachable here); nothing outside the tests runs it.

State (GPUs, MIG mode, GPU instances) lives in the JSON file named by DLSTACK_STANDIN_SMI_STATE (default
/opt/dlstack-standin/smi.json); every call is appended
to its "calls". Answers --query-gpu=index,name,mig.mode.current,mig.mode.pending, -i N -mig 1, mig -lgip, mig -lgi,
mig -cgi IDS -C -i N, mig -dci -i N and mig -dgi -i N in the table layout nvidia-smi prints (profile ids, instance
counts and "Start:Size" placements as on an A100 80GB; the MIG user guide lists the same profile ids for H100).
"""

import json
import os
import sys

PROFILES = {  # name: (id, compute slices, memory slices, instances)
    "NVIDIA A100-SXM4-80GB": [
        ("1g.10gb", 19, 1, 1, 7),
        ("1g.10gb+me", 20, 1, 1, 1),
        ("1g.20gb", 15, 1, 2, 4),
        ("2g.20gb", 14, 2, 2, 3),
        ("3g.40gb", 9, 3, 4, 2),
        ("4g.40gb", 5, 4, 4, 1),
        ("7g.80gb", 0, 7, 8, 1),
    ],
}
RULE = "+" + "-" * 77 + "+"


def main(argv):
    path = os.environ.get("DLSTACK_STANDIN_SMI_STATE", "/opt/dlstack-standin/smi.json")
    with open(path) as handle:
        state = json.load(handle)
    state.setdefault("calls", []).append(argv)
    rc = run(state, argv)
    with open(path, "w") as handle:
        json.dump(state, handle)
    return rc


def gpu_arg(argv):
    return int(argv[argv.index("-i") + 1]) if "-i" in argv else None


def run(state, argv):
    gpus = state["gpus"]
    instances = state.setdefault("instances", {})
    if argv and argv[0].startswith("--query-gpu="):
        for g in gpus:
            print(f"{g['index']}, {g['name']}, {g['mig_current']}, {g['mig_pending']}")
        return 0
    if "-mig" in argv:
        g = gpus[gpu_arg(argv)]
        g["mig_pending"] = "Enabled" if argv[argv.index("-mig") + 1] == "1" else "Disabled"
        print(f"Enabled MIG Mode for GPU 00000000:{0x18 + g['index']:02X}:00.0\nAll done.")
        return 0
    if argv[:1] != ["mig"]:
        print("stand-in: unsupported call", argv, file=sys.stderr)
        return 2
    verb, index = argv[1], gpu_arg(argv)
    if verb == "-lgip":
        print(RULE + "\n| GPU instance profiles:" + " " * 54 + "|\n" + RULE)
        for g in gpus:
            used = instances.get(str(g["index"]), [])
            for name, pid, _c, _m, total in PROFILES.get(g["name"], []):
                free = max(0, total - sum(1 for i in used if i["profile"] == name))
                print(
                    f"|  {g['index']:2d}  MIG {name:<13} {pid:3d}     {free}/{total}"
                    "        9.75       No     28     1     0   |"
                )
                print("|" + " " * 60 + "1     0     0   |\n" + RULE)
        return 0
    if verb == "-lgi":
        rows = [(int(k), i) for k, v in instances.items() for i in v if index is None or int(k) == index]
        if not rows:
            print("No GPU instances found: Not Found")
            return 6
        print("+" + "-" * 55 + "+\n| GPU instances:" + " " * 40 + "|")
        for gpu, i in sorted(rows, key=lambda r: (r[0], r[1]["instance_id"])):
            print(
                f"|  {gpu:2d}  MIG {i['profile']:<13} {i['profile_id']:4d}     {i['instance_id']:4d}"
                f"        {i['placement']:<5} |"
            )
            print("+" + "-" * 55 + "+")
        return 0
    g = gpus[index]
    if g["mig_current"] != "Enabled":
        print(f"MIG mode is disabled on GPU {index}", file=sys.stderr)
        return 3
    if verb in ("-dci", "-dgi"):
        if verb == "-dgi":
            instances[str(index)] = []
        return 0
    if verb == "-cgi":
        table = {pid: (name, c, m) for name, pid, c, m, _t in PROFILES[g["name"]]}
        wanted = [table[int(x)] for x in argv[2].split(",")]
        current = instances.setdefault(str(index), [])
        start = sum(int(i["placement"].split(":")[1]) for i in current)
        if start + sum(m for _n, _c, m in wanted) > 8:
            print(f"Unable to create a GPU instance on GPU {index} using profile {argv[2]}: Insufficient Resources")
            return 2
        for name, _c, m in wanted:
            pid = next(p for p, v in table.items() if v[0] == name)
            current.append(
                {"profile": name, "profile_id": pid, "instance_id": len(current) + 1, "placement": f"{start}:{m}"}
            )
            start += m
            print(
                f"Successfully created GPU instance ID {len(current)} on GPU {index}"
                f" using profile MIG {name} (ID {pid})"
            )
        return 0
    print("stand-in: unsupported call", argv, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
