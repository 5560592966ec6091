#!/usr/bin/env python3
"""Run an exported edge-value bundle on an NVIDIA GPU and write the outputs.

Standalone: needs numpy and either CuPy or the CUDA driver library (``libcuda``,
through ctypes); no ptxopt import.  Usage::

    python3 run_gpu.py BUNDLE_DIR OUT_DIR

reads ``BUNDLE_DIR/manifest.json``, ``inputs.npz`` and the cubins, launches every
case (one thread per lane), and writes ``OUT_DIR/results.npz`` (one array per output
port, keyed ``"<case index>/<port>"``) and ``OUT_DIR/results.json`` (device name,
per-case status and a SHA-256 digest of each output).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import sys
from pathlib import Path

import numpy as np


class Driver:
    """The few CUDA driver calls a launch needs (ctypes)."""

    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.check(self.lib.cuInit(0))
        dev = ctypes.c_int()
        self.check(self.lib.cuDeviceGet(ctypes.byref(dev), 0))
        name = ctypes.create_string_buffer(256)
        self.check(self.lib.cuDeviceGetName(name, 256, dev))
        self.name = name.value.decode()
        self.ctx = ctypes.c_void_p()
        self.check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx), dev))
        self.check(self.lib.cuCtxSetCurrent(self.ctx))

    def check(self, rc: int) -> None:
        if rc != 0:
            msg = ctypes.c_char_p()
            self.lib.cuGetErrorString(rc, ctypes.byref(msg))
            raise RuntimeError(f"CUDA driver error {rc}: {msg.value}")

    def run(self, cubin: bytes, name: str, arrays: list[np.ndarray], n: int) -> list[np.ndarray]:
        lib = self.lib
        mod = ctypes.c_void_p()
        self.check(lib.cuModuleLoadData(ctypes.byref(mod), cubin))
        fn = ctypes.c_void_p()
        self.check(lib.cuModuleGetFunction(ctypes.byref(fn), mod, name.encode()))
        ptrs = []
        for a in arrays:
            p = ctypes.c_uint64()
            self.check(lib.cuMemAlloc_v2(ctypes.byref(p), max(a.nbytes, 1)))
            self.check(lib.cuMemcpyHtoD_v2(p, a.ctypes.data_as(ctypes.c_void_p), a.nbytes))
            ptrs.append(p)
        count = ctypes.c_uint32(n)
        params = (ctypes.c_void_p * (len(ptrs) + 1))(
            *[ctypes.cast(ctypes.byref(p), ctypes.c_void_p) for p in ptrs],
            ctypes.cast(ctypes.byref(count), ctypes.c_void_p),
        )
        block = 256
        grid = (n + block - 1) // block
        self.check(lib.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, None, params, None))
        self.check(lib.cuCtxSynchronize())
        out = []
        for a, p in zip(arrays, ptrs, strict=True):
            b = np.empty_like(a)
            self.check(lib.cuMemcpyDtoH_v2(b.ctypes.data_as(ctypes.c_void_p), p, a.nbytes))
            out.append(b)
            self.check(lib.cuMemFree_v2(p))
        self.check(lib.cuModuleUnload(mod))
        return out


def main() -> int:
    bundle, out_dir = Path(sys.argv[1]), Path(sys.argv[2])
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((bundle / "manifest.json").read_text())
    inputs = np.load(bundle / "inputs.npz")
    drv = Driver()
    results: dict[str, np.ndarray] = {}
    summary = {"device": drv.name, "cases": {}}
    for idx, case in enumerate(manifest["cases"]):
        key = str(idx)
        if case.get("cubin") is None:
            summary["cases"][key] = {"name": case["name"], "status": "skipped"}
            continue
        arrays = [np.ascontiguousarray(inputs[f"{key}/{p['name']}"]) for p in case["inputs"]]
        arrays += [np.zeros(case["lanes"], dtype=p["dtype"]) for p in case["outputs"]]
        try:
            got = drv.run((bundle / case["cubin"]).read_bytes(), "edge", arrays, case["lanes"])
        except RuntimeError as e:
            summary["cases"][key] = {"name": case["name"], "status": f"error: {e}"}
            continue
        digests = {}
        for p, arr in zip(case["outputs"], got[len(case["inputs"]) :], strict=True):
            results[f"{key}/{p['name']}"] = arr
            digests[p["name"]] = hashlib.sha256(arr.tobytes()).hexdigest()
        summary["cases"][key] = {"name": case["name"], "status": "ran", "digests": digests}
    np.savez_compressed(out_dir / "results.npz", **results)
    (out_dir / "results.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    ran = sum(1 for c in summary["cases"].values() if c["status"] == "ran")
    print(f"{drv.name}: {ran} of {len(manifest['cases'])} cases ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
