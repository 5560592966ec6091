#!/usr/bin/env python3
"""Regenerate the ptxopt PTX corpus from its sources.

Producers (each skipped with a message when its tool is missing):
  nvcc    cuda/src/*.cu  -> cuda/<src>.<cfg>.ptx for cfg in O3.sm90, O0.sm90, G.sm90, O3.sm75
  cub     cub/src/*.cu (CUB from nvcc's own headers) -> cub/<src>.sm80.ptx, cub/<src>.sm90.ptx
  cutlass CUTLASS examples (a checkout named by CUTLASS_DIR, at CUTLASS_COMMIT; nothing
          of CUTLASS is stored here) -> cutlass/<name>.<arch>.ptx
  triton  triton/kernels.py, triton/production.py (triton 3.5.1) -> triton/<name>.ptx
  numba   numba/kernels.py (numba-cuda 0.30.4, libNVVM 13.0.88 wheels) -> numba/<name>.ptx
  llvm    llvm/*.ll (llc from LLVM 14) -> llvm/<name>.sm75.ptx

Every produced file is checked with `ptxas -arch=<.target of the file>`; a summary table
is printed and manifest.json is rewritten (entries, parameters, launch descriptions).

Usage: python3 tests/corpus/generate.py [--only nvcc,cub,cutlass,triton,numba,llvm]
                                        [--no-manifest]
"""

import argparse
import atexit
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
NVCC = os.environ.get("NVCC", shutil.which("nvcc") or "/usr/local/bin/nvcc")
PTXAS = os.environ.get("PTXAS", shutil.which("ptxas") or "/usr/local/bin/ptxas")
LLC = os.environ.get("LLC", shutil.which("llc") or "/usr/bin/llc")

NVCC_CONFIGS = [
    ("O3.sm90", ["-O3", "-arch=sm_90"]),
    ("O0.sm90", ["-Xcicc", "-O0", "-arch=sm_90"]),
    ("G.sm90", ["-G", "-arch=sm_90"]),
    ("O3.sm75", ["-O3", "-arch=sm_75"]),
]

# Sources are compiled from a fixed staging folder so the file names that nvcc -G (DWARF
# .file/.debug_info) and Triton (line info) embed do not depend on where the repo lives.
STAGE = "/tmp/ptxopt-corpus-src"

TENSOR_CORE_RE = re.compile(r"\b(mma\.sync|wgmma|ldmatrix|stmatrix|cp\.async|mbarrier)\b")


def load_module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def stage(rel_src):
    """Copy a source file into STAGE (same relative path) and return the staged path."""
    dst = os.path.join(STAGE, rel_src)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copyfile(os.path.join(HERE, rel_src), dst)
    return dst


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


# ----------------------------------------------------------------------------- producers


def gen_nvcc():
    out = []
    if not os.path.exists(NVCC):
        print("skip nvcc: not found")
        return out
    src_dir = os.path.join(HERE, "cuda", "src")
    for src in sorted(os.listdir(src_dir)):
        if not src.endswith(".cu"):
            continue
        base = src[:-3]
        for cfg, flags in NVCC_CONFIGS:
            rel = f"cuda/{base}.{cfg}.ptx"
            staged = stage(f"cuda/src/{src}")
            subprocess.run(
                [NVCC, "-ptx", *flags, os.path.basename(staged), "-o", os.path.join(HERE, rel)],
                check=True,
                cwd=os.path.dirname(staged),
            )
            out.append((rel, "nvcc", f"nvcc {' '.join(flags)}"))
    return out


CUB_CONFIGS = [("sm80", ["-O3", "-arch=sm_80"]), ("sm90", ["-O3", "-arch=sm_90"])]


def gen_cub():
    """CUB device algorithms: each source calls the host dispatch so that nvcc
    instantiates the kernels; only the PTX of the kernels is kept."""
    out = []
    if not os.path.exists(NVCC):
        print("skip cub: nvcc not found")
        return out
    src_dir = os.path.join(HERE, "cub", "src")
    for src in sorted(os.listdir(src_dir)):
        if not src.endswith(".cu"):
            continue
        staged = stage(f"cub/src/{src}")
        for cfg, flags in CUB_CONFIGS:
            rel = f"cub/{src[:-3]}.{cfg}.ptx"
            subprocess.run(
                [NVCC, "-ptx", *flags, os.path.basename(staged), "-o", os.path.join(HERE, rel)],
                check=True,
                cwd=os.path.dirname(staged),
            )
            out.append((rel, "cub", f"nvcc {' '.join(flags)} (CUB from CUDA 13.0.88)"))
    return out


# CUTLASS examples compiled as they are in the CUTLASS repository (NVIDIA/cutlass at
# CUTLASS_COMMIT); the sources are not part of this repository. name -> (example source,
# -arch). The recipe is the examples' own CMake flags reduced to what -ptx needs.
CUTLASS_COMMIT = "7107b05535f8977f5ecb9d01ee203205b1fd9bc4"
CUTLASS_EXAMPLES = {
    "hopper_ws_gemm.sm90a": (
        "examples/48_hopper_warp_specialized_gemm/48_hopper_warp_specialized_gemm.cu",
        "sm_90a",
    ),
    "hopper_fp8_gemm.sm90a": (
        "examples/54_hopper_fp8_warp_specialized_gemm/54_hopper_fp8_warp_specialized_gemm.cu",
        "sm_90a",
    ),
    "hopper_mixed_dtype_gemm.sm90a": (
        "examples/55_hopper_mixed_dtype_gemm/55_hopper_mixed_dtype_gemm.cu",
        "sm_90a",
    ),
    "ampere_tf32_gemm.sm80": (
        "examples/14_ampere_tf32_tensorop_gemm/ampere_tf32_tensorop_gemm.cu",
        "sm_80",
    ),
    "ampere_conv2d_fprop.sm80": (
        "examples/16_ampere_tensorop_conv2dfprop/ampere_tensorop_conv2dfprop.cu",
        "sm_80",
    ),
    "ampere_fmha.sm80": (
        "examples/41_fused_multi_head_attention/fused_multihead_attention_fixed_seqlen.cu",
        "sm_80",
    ),
}
CUTLASS_FLAGS = ["-O3", "-std=c++17", "--expt-relaxed-constexpr", "-DNDEBUG"]
CUTLASS_INCLUDES = ["include", "tools/util/include", "examples/common"]


def curand_include():
    """Directory holding curand_kernel.h (CUTLASS's device-side random fill needs it):
    CURAND_INCLUDE, the CUDA toolkit, or PyPI's nvidia-curand wheel."""
    cands = [os.environ.get("CURAND_INCLUDE", "")]
    cands.append(os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(NVCC))), "include"))
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        cands += [os.path.join(root, "cu13", "include"), os.path.join(root, "curand", "include")]
    for c in cands:
        if c and os.path.exists(os.path.join(c, "curand_kernel.h")):
            return c
    return None


def gen_cutlass():
    out = []
    root = os.environ.get("CUTLASS_DIR")
    if not root or not os.path.isdir(os.path.join(root, "include", "cutlass")):
        print(f"skip cutlass: set CUTLASS_DIR to a checkout of NVIDIA/cutlass at {CUTLASS_COMMIT}")
        return out
    if not os.path.exists(NVCC):
        print("skip cutlass: nvcc not found")
        return out
    head = subprocess.run(
        ["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    if head and head != CUTLASS_COMMIT:
        print(f"note: corpus was made from CUTLASS {CUTLASS_COMMIT}, CUTLASS_DIR is at {head}")
    curand = curand_include()
    if curand is None:
        print("skip cutlass: curand_kernel.h not found (pip install nvidia-curand)")
        return out
    includes = [f"-I{d}" for d in CUTLASS_INCLUDES] + [f"-I{curand}"]
    os.makedirs(os.path.join(HERE, "cutlass"), exist_ok=True)
    for name, (src, arch) in CUTLASS_EXAMPLES.items():
        rel = f"cutlass/{name}.ptx"
        flags = [*CUTLASS_FLAGS, f"-arch={arch}"]
        print(f"   {rel} <- {src}", flush=True)
        r = subprocess.run(
            [NVCC, "-ptx", *flags, *includes, src, "-o", os.path.join(HERE, rel)],
            cwd=root,
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:  # CUTLASS's warnings are only shown when the build fails
            sys.exit(f"nvcc failed on {src}:\n{r.stderr}")
        out.append((rel, "cutlass", f"nvcc {' '.join(flags)} CUTLASS {CUTLASS_COMMIT[:10]} {src}"))
    return out


TRITON_SHARED: dict = {}
TRITON_MODULES = ["kernels.py", "production.py"]


def gen_triton():
    out = []
    # a fresh cache so every file comes from a real compile of the staged source
    cache = tempfile.mkdtemp(prefix="ptxopt-triton-cache-")
    atexit.register(shutil.rmtree, cache, True)
    os.environ["TRITON_CACHE_DIR"] = cache
    try:
        import triton
        from triton.backends.compiler import GPUTarget
    except ImportError:
        print("skip triton: `import triton` failed (pip install triton==3.5.1)")
        return out
    if triton.__version__ != "3.5.1":
        print(f"note: corpus was made with triton 3.5.1, found {triton.__version__}")
    # assemble with the reference ptxas so the emitted .version is one it accepts
    os.environ.setdefault("TRITON_PTXAS_PATH", PTXAS)
    specs = {}
    for src in TRITON_MODULES:
        kmod = load_module(f"corpus_triton_{src[:-3]}", stage(f"triton/{src}"))
        specs.update(kmod.SPECS)
    for name, spec in specs.items():
        fn, sig, constexprs, arch, opts = spec[:5]
        attrs = spec[5] if len(spec) > 5 else None
        signature = dict(sig)
        signature.update({k: "constexpr" for k in constexprs})
        src = triton.compiler.ASTSource(
            fn=fn, signature=signature, constexprs=constexprs, attrs=attrs
        )
        kernel = triton.compile(
            src, target=GPUTarget("cuda", arch, 32), options=dict(opts, ptx_version=90)
        )
        rel = f"triton/{name}.ptx"
        write(os.path.join(HERE, rel), kernel.asm["ptx"])
        # Triton kernels take all shared memory dynamically (.extern .shared
        # global_smem[]); the launch must pass the size Triton computed.
        TRITON_SHARED[rel] = int(kernel.metadata.shared)
        cfg = f"triton {triton.__version__} cc{arch} " + " ".join(
            f"{k}={v}" for k, v in opts.items()
        )
        cfg += " " + " ".join(f"{k}={v}" for k, v in constexprs.items())
        out.append((rel, "triton", cfg))
    return out


def gen_numba():
    out = []
    try:
        import numba_cuda  # noqa: F401
        from numba import cuda
    except ImportError:
        print(
            "skip numba: numba-cuda not installed (pip install numba-cuda "
            "nvidia-nvvm==13.0.88 nvidia-cuda-nvrtc==13.0.88)"
        )
        return out
    kmod = load_module("corpus_numba", os.path.join(HERE, "numba", "kernels.py"))
    for name, (fn, sig, cc) in kmod.SPECS.items():
        try:
            ptx, _ = cuda.compile_ptx(fn, sig, cc=cc)
        except Exception as e:  # missing libNVVM / NVRTC
            print(f"skip numba: compile_ptx failed: {type(e).__name__}: {str(e).splitlines()[0]}")
            return out
        rel = f"numba/{name}.ptx"
        write(os.path.join(HERE, rel), ptx)
        out.append((rel, "numba", f"numba-cuda compile_ptx cc={cc[0]}.{cc[1]}"))
    return out


def gen_llvm():
    out = []
    if not os.path.exists(LLC):
        print("skip llvm: llc not found")
        return out
    d = os.path.join(HERE, "llvm")
    for src in sorted(os.listdir(d)):
        if not src.endswith(".ll"):
            continue
        rel = f"llvm/{src[:-3]}.sm75.ptx"
        subprocess.run(
            [
                LLC,
                "-march=nvptx64",
                "-mcpu=sm_75",
                os.path.join(d, src),
                "-o",
                os.path.join(HERE, rel),
            ],
            check=True,
        )
        out.append((rel, "llvm", "llc -march=nvptx64 -mcpu=sm_75"))
    return out


# ----------------------------------------------------------------------------- PTX facts


def ptx_target(text):
    m = re.search(r"^\s*\.target\s+([\w]+)", text, re.M)
    return m.group(1)


def ptx_entries(text):
    """[(name, [param type, ...])] for every .entry in the file."""
    res = []
    for m in re.finditer(r"\.entry\s+([\w$]+)\s*\((.*?)\)", text, re.S):
        types = []
        for p in m.group(2).split(","):
            p = p.strip()
            if not p:
                continue
            t = re.search(r"\.param\s+\.(\w+)", p).group(1)
            if t == "align":
                t = "b8[]"  # byval aggregate
            types.append(t)
        res.append((m.group(1), types))
    return res


def ptxas_ok(path, target):
    r = subprocess.run(
        [PTXAS, f"-arch={target}", path, "-o", os.devnull], capture_output=True, text=True
    )
    return r.returncode == 0, (r.stderr or "").strip()


# ----------------------------------------------------------------------------- launches
# Argument helpers; the format is documented in README.md and used by references.make_args.


def arr(dtype, size, fill="zeros", seed=None, **kw):
    d = {"kind": "array", "dtype": dtype, "size": size, "fill": fill}
    if seed is not None:
        d["seed"] = seed
    d.update(kw)
    return d


def sc(dtype, value):
    return {"kind": "scalar", "dtype": dtype, "value": value}


NULL = sc("uint64", 0)  # unused pointer parameter (triton scratch, numba meminfo/parent)

_ITEMSIZE = {"float32": 4, "int32": 4, "uint32": 4, "float16": 2, "int64": 8, "uint64": 8}


def nb_arr(dtype, size, fill="zeros", seed=None, **kw):
    """A 1-D numba array: (meminfo, parent, nitems, itemsize, data, shape[0], strides[0])."""
    isz = _ITEMSIZE[dtype]
    return [
        NULL,
        NULL,
        sc("int64", size),
        sc("int64", isz),
        arr(dtype, size, fill, seed, **kw),
        sc("int64", size),
        sc("int64", isz),
    ]


def L(kernel, grid, block, args, reference, shared=0, **extra):
    d = {
        "kernel": kernel,
        "grid": grid,
        "block": block,
        "shared_bytes": shared,
        "args": args,
        "reference": reference,
    }
    d.update(extra)
    return d


def cuda_launches():
    """Launches per source file; the same launches apply to all four nvcc configs."""
    el = [
        L(
            "saxpy_gs",
            3,
            100,
            [
                arr("float32", 1000, "random", 1),
                arr("float32", 1000, "random", 2),
                sc("float32", 1.5),
                sc("uint64", 1000),
            ],
            "ref_saxpy",
        ),
        L(
            "saxpy_gs",
            2,
            64,
            [
                arr("float32", 777, "random", 3),
                arr("float32", 777, "random", 4),
                sc("float32", -0.3125),
                sc("uint64", 777),
            ],
            "ref_saxpy",
        ),
        L(
            "vec4_scale",
            2,
            128,
            [
                arr("float32", 1000, "random", 5),
                arr("float32", 1000),
                sc("float32", 0.75),
                sc("int32", 250),
            ],
            "ref_vec4_scale",
        ),
        L(
            "int2_mix",
            4,
            96,
            [
                arr("int32", 600, "randint", 6, low=-100000, high=100000),
                arr("int32", 600),
                sc("int32", 300),
            ],
            "ref_int2_mix",
        ),
        L(
            "half_bf16_ops",
            4,
            128,
            [
                arr("float16", 500, "random", 7),
                arr("float16", 500, "random", 8),
                arr("float16", 500),
                arr("bfloat16", 500),
                arr("float16", 500),
                sc("int32", 500),
            ],
            "ref_half_bf16_ops",
        ),
        L(
            "bf16x2_double",
            3,
            50,
            [arr("bfloat16", 300, "random", 9), arr("bfloat16", 300), sc("int32", 150)],
            "ref_bf16x2_double",
        ),
    ]
    rd = [
        L(
            "block_reduce_sum",
            4,
            128,
            [
                arr("int32", 3000, "randint", 10, low=-1000, high=1000),
                arr("int32", 4),
                sc("int32", 3000),
            ],
            "ref_block_reduce_sum",
        ),
        L(
            "warp_reduce_f32",
            5,
            64,
            [
                arr("float32", 300, "randint", 11, low=0, high=10),
                arr("float32", 1),
                sc("int32", 300),
            ],
            "ref_warp_reduce_f32",
        ),
        L(
            "warp_scan_u32",
            3,
            80,
            [
                arr("uint32", 230, "randint", 12, low=0, high=1000),
                arr("uint32", 230),
                sc("int32", 230),
            ],
            "ref_warp_scan_u32",
        ),
        L(
            "warp_xor_max_bcast",
            3,
            64,
            [
                arr("int32", 150, "randint", 13, low=-5000, high=5000),
                arr("int32", 150),
                sc("int32", 150),
            ],
            "ref_warp_xor_max_bcast",
        ),
        L(
            "warp_votes",
            3,
            48,
            [
                arr("int32", 130, "randint", 14, low=0, high=100),
                arr("uint32", 520),
                sc("int32", 130),
                sc("int32", 50),
            ],
            "ref_warp_votes",
        ),
        L(
            "match_any_groups",
            2,
            70,
            [arr("int32", 130, "randint", 15, low=0, high=4), arr("uint32", 260), sc("int32", 130)],
            "ref_match_any_groups",
        ),
        L(
            "warp_redux",
            3,
            64,
            [
                arr("uint32", 170, "randint", 16, low=0, high=100000),
                arr("uint32", 340),
                sc("int32", 170),
            ],
            "ref_warp_redux",
        ),
    ]
    at = [
        L(
            "histogram",
            4,
            128,
            [
                arr("uint32", 2000, "randint", 17, low=0, high=1 << 20),
                arr("uint32", 37),
                sc("int32", 2000),
                sc("int32", 37),
            ],
            "ref_histogram",
        ),
        L(
            "count_matches",
            4,
            256,
            [
                arr("int32", 1000, "randint", 18, low=0, high=20),
                arr("int32", 2, "values", values=[0, 2147483647]),
                sc("int32", 1000),
                sc("int32", 7),
            ],
            "ref_count_matches",
        ),
        L(
            "sum_last_block",
            5,
            128,
            [
                arr("int32", 600, "randint", 19, low=-100, high=100),
                arr("int32", 5),
                arr("int32", 1),
                arr("uint32", 1),
                sc("int32", 600),
            ],
            "ref_sum_last_block",
        ),
        L(
            "cas_max_f32",
            8,
            128,
            [
                arr("float32", 999, "random", 20),
                arr("float32", 1, "values", values=[-1.0e30]),
                sc("int32", 999),
            ],
            "ref_cas_max_f32",
        ),
        L(
            "scatter_add_f32",
            8,
            128,
            [
                arr("int32", 1000, "randint", 21, low=0, high=50),
                arr("float32", 1000, "randint", 22, low=0, high=8),
                arr("float32", 50),
                arr("int32", 50),
                sc("int32", 1000),
            ],
            "ref_scatter_add_f32",
        ),
    ]
    ct = [
        L(
            "collatz",
            5,
            64,
            [
                arr("uint32", 300, "randint", 23, low=1, high=10000),
                arr("int32", 300),
                arr("uint32", 300),
                sc("int32", 300),
            ],
            "ref_collatz",
        ),
        L(
            "recursive_calls",
            4,
            32,
            [arr("int32", 100, "randint", 24, low=0, high=40), arr("int32", 200), sc("int32", 100)],
            "ref_recursive_calls",
        ),
        L(
            "local_sort8",
            4,
            64,
            [
                arr("int32", 1600, "randint", 25, low=-500, high=500),
                arr("int32", 1600),
                arr("int32", 200),
                sc("int32", 200),
            ],
            "ref_local_sort8",
        ),
        L(
            "switch_ops",
            4,
            128,
            [
                arr("int32", 500, "randint", 26, low=0, high=12),
                arr("int32", 500, "randint", 27, low=-1000, high=1000),
                arr("int32", 500, "randint", 28, low=-20, high=20),
                arr("int32", 500),
                sc("int32", 500),
            ],
            "ref_switch_ops",
        ),
        L(
            "classify_points",
            6,
            128,
            [
                arr("float32", 700, "random", 29),
                arr("float32", 700, "random", 30),
                arr("int32", 700),
                sc("int32", 700),
            ],
            "ref_classify_points",
        ),
        L(
            "search_kernels",
            5,
            64,
            [
                arr("int32", 150, "randint", 31, low=0, high=200),
                arr("int32", 150, "randint", 32, low=0, high=200, sort=True),
                sc("int32", 150),
                arr("int32", 300, "randint", 33, low=0, high=220),
                arr("int32", 300),
                arr("int32", 300),
                sc("int32", 300),
            ],
            "ref_search_kernels",
        ),
        L(
            "poly_eval",
            4,
            256,
            [
                arr("float32", 1000, "random", 34, low=-2.0, high=2.0),
                arr("float32", 1000),
                sc("int32", 1000),
            ],
            "ref_poly_eval",
        ),
    ]
    return {"elementwise": el, "reduce": rd, "atomics": at, "control": ct}


def other_launches():
    return {
        "triton/vector_add.sm90.ptx": [
            L(
                "vector_add",
                4,
                128,
                [
                    arr("float32", 1000, "random", 50),
                    arr("float32", 1000, "random", 51),
                    arr("float32", 1000),
                    sc("int32", 1000),
                    NULL,
                    NULL,
                ],
                "ref_tt_vector_add",
            )
        ],
        "triton/row_softmax.sm90.ptx": [
            L(
                "row_softmax",
                5,
                128,
                [
                    arr("float32", 500, "random", 52, low=-4.0, high=4.0),
                    arr("float32", 500),
                    sc("int32", 100),
                    sc("int32", 100),
                    NULL,
                    NULL,
                ],
                "ref_tt_row_softmax",
            )
        ],
        "triton/cumsum.sm80.ptx": [
            L(
                "masked_cumsum",
                3,
                128,
                [
                    arr("int32", 600, "randint", 53, low=-50, high=50),
                    arr("int32", 600),
                    sc("int32", 600),
                    NULL,
                    NULL,
                ],
                "ref_tt_cumsum",
            )
        ],
        **layer_norm_launches(),
        **tensor_core_launches(),
        **library_launches(),
        # the ~44k-line unrolled kernel: 2 heads of 80 queries/keys, head dim 128
        "triton/attention_fwd_fp32_ieee.sm80.ptx": [
            L(
                "attention_fwd",
                [2, 2, 1],
                32,
                [
                    arr("float32", 2 * 80 * 128, "random", 120, low=-1.0, high=1.0),
                    arr("float32", 2 * 80 * 128, "random", 121, low=-1.0, high=1.0),
                    arr("float32", 2 * 80 * 128, "random", 122, low=-1.0, high=1.0),
                    arr("float32", 2 * 80 * 128),
                    arr("float32", 2 * 80),
                    sc("float32", 0.125),
                    sc("int32", 80),
                    NULL,
                    NULL,
                ],
                "ref_tt_attention_fwd",
                heavy=True,
            )
        ],
        "numba/scale_shift.sm75.ptx": [
            L(
                None,
                3,
                100,
                nb_arr("float32", 257, "random", 60) + nb_arr("float32", 257) + [sc("int32", 257)],
                "ref_nb_scale_shift",
            )
        ],
        "numba/digit_histogram.sm75.ptx": [
            L(
                None,
                4,
                64,
                nb_arr("uint32", 200, "randint", 61, low=0, high=100000)
                + nb_arr("uint32", 10)
                + [sc("int32", 200)],
                "ref_nb_digit_histogram",
            )
        ],
        "numba/clamp_count.sm80.ptx": [
            L(
                None,
                2,
                100,
                nb_arr("int32", 500, "randint", 62, low=-300, high=300)
                + nb_arr("int32", 501)
                + [sc("int32", -100), sc("int32", 200)],
                "ref_nb_clamp_count",
            )
        ],
        "llvm/saxpy_i64.sm75.ptx": [
            L(
                "saxpy_i64",
                2,
                96,
                [
                    arr("float32", 1000, "random", 70),
                    arr("float32", 1000, "random", 71),
                    sc("float32", 2.25),
                    sc("uint64", 1000),
                ],
                "ref_saxpy",
            )
        ],
        "llvm/block_bitcount.sm75.ptx": [
            L(
                "block_bitcount",
                3,
                128,
                [
                    arr("int32", 300, "randint", 72, low=-(2**31), high=2**31 - 1),
                    arr("int32", 300),
                    arr("int32", 3),
                    sc("int32", 300),
                ],
                "ref_block_bitcount",
            )
        ],
    }


def _mm(kernel_file, dtype, m, n, k, grid, block, shared, seed):
    """Triton's matmul (kernels.py): row-major A [m, k], B [k, n], C [m, n]; sizes that
    are multiples of 16 (the divisibility hints) but not of the tiles, so the last tiles
    are masked."""
    return L(
        "matmul",
        grid,
        block,
        [
            arr(dtype, m * k, "random", seed, low=-1.0, high=1.0),
            arr(dtype, k * n, "random", seed + 1, low=-1.0, high=1.0),
            arr(dtype, m * n),
            sc("int32", m),
            sc("int32", n),
            sc("int32", k),
            sc("int32", k),
            sc("int32", 1),
            sc("int32", n),
            sc("int32", 1),
            sc("int32", n),
            sc("int32", 1),
            NULL,
            NULL,
        ],
        "ref_tt_matmul",
        shared,
    )


def _attn_fwd(dtype, heads, seq, grid, block, shared, seed):
    size = heads * seq * 64
    return L(
        "attention_fwd",
        grid,
        block,
        [
            arr(dtype, size, "random", seed, low=-1.0, high=1.0),
            arr(dtype, size, "random", seed + 1, low=-1.0, high=1.0),
            arr(dtype, size, "random", seed + 2, low=-1.0, high=1.0),
            arr(dtype, size),
            arr("float32", heads * seq),
            sc("float32", 0.125),
            sc("int32", seq),
            NULL,
            NULL,
        ],
        "ref_tt_attention_fwd_causal",
        shared,
    )


def _attn_bwd(dtype, heads, seq, grid, block, shared, seed):
    size = heads * seq * 64
    return L(
        "attention_bwd",
        grid,
        block,
        [
            arr(dtype, size, "random", seed, low=-1.0, high=1.0),
            arr(dtype, size, "random", seed + 1, low=-1.0, high=1.0),
            arr(dtype, size, "random", seed + 2, low=-1.0, high=1.0),
            arr(dtype, size, "random", seed + 3, low=-1.0, high=1.0),
            arr("float32", size),
            arr(dtype, size),
            arr(dtype, size),
            arr("float32", heads * seq, "random", seed + 4, low=2.0, high=4.0),
            arr("float32", heads * seq, "random", seed + 5, low=-0.5, high=0.5),
            sc("float32", 0.125),
            sc("int32", seq),
            NULL,
            NULL,
        ],
        "ref_tt_attention_bwd_causal",
        shared,
    )


def tensor_core_launches():
    """The tensor-core Triton kernels (ldmatrix/mma.sync on sm_80, wgmma on sm_90a),
    the FMA matmul, and the fp8 GEMM.  Shared sizes cover Triton's allocation."""
    fp8 = dict(low=0x18, high=0x48)  # e4m3 bit patterns of 1/16 .. 4 (no NaN)
    m, n, k = 144, 80, 96
    return {
        "triton/matmul_fp16.sm80.ptx": [
            _mm("matmul", "float16", 80, 48, 48, [2, 1, 1], 128, 32768, 130)
        ],
        "triton/matmul_fp16.sm90a.ptx": [
            _mm("matmul", "float16", 144, 80, 96, [2, 1, 1], 128, 131072, 132)
        ],
        "triton/matmul_fp32_ieee.sm90.ptx": [
            _mm("matmul", "float32", 80, 72, 120, [2, 2, 1], 32, 65536, 134)
        ],
        "triton/attention_fwd_fp16.sm80.ptx": [
            _attn_fwd("float16", 2, 80, [2, 2, 1], 128, 65536, 140)
        ],
        "triton/attention_fwd_fp16.sm90a.ptx": [
            _attn_fwd("float16", 2, 144, [2, 2, 1], 256, 131072, 145)
        ],
        "triton/attention_bwd_fp16.sm80.ptx": [
            _attn_bwd("float16", 2, 80, [2, 2, 1], 128, 65536, 150)
        ],
        "triton/attention_bwd_bf16.sm90a.ptx": [
            _attn_bwd("bfloat16", 2, 80, [2, 2, 1], 128, 131072, 160)
        ],
        "triton/fp8_matmul.sm90a.ptx": [
            L(
                "fp8_matmul",
                2,
                256,
                [
                    arr("uint8", m * k, "randint", 170, **fp8),
                    arr("uint8", n * k, "randint", 171, **fp8),
                    arr("float16", m * n),
                    sc("float32", 0.5),
                    sc("float32", 0.25),
                    sc("int32", m),
                    sc("int32", n),
                    sc("int32", k),
                    sc("int32", k),
                    sc("int32", k),
                    sc("int32", n),
                    NULL,
                    NULL,
                ],
                "ref_tt_fp8_matmul",
                131072,
            )
        ],
        # tensor descriptors built on the device (tensormap.replace) in the global scratch
        # Triton asks for (384 bytes per program), TMA loads with mbarriers, TMA stores
        "triton/fp8_matmul_tma.sm90a.ptx": [
            L(
                "fp8_matmul_tma",
                2,
                256,
                [
                    arr("uint8", m * k, "randint", 172, **fp8),
                    arr("uint8", n * k, "randint", 173, **fp8),
                    arr("float16", m * n),
                    sc("float32", 0.5),
                    sc("float32", 0.25),
                    sc("int32", m),
                    sc("int32", n),
                    sc("int32", k),
                    arr("uint8", 2 * 384),
                    NULL,
                ],
                "ref_tt_fp8_matmul_tma",
                229376,
            )
        ],
    }


_CUB_SINGLE_TILE = (
    "_ZN3cub17CUB_300001_SM_{sm}06detail10radix_sort31DeviceRadixSortSingleTileKernelINS1_5radix"
    "10policy_hubI{hub}10Policy1000ELNS0_9SortOrderE{order}E{tail}"
)
_CUB_PAIRS = ("jijE", "0", "jijNS1_21identity_decomposer_tEEEvPKT1_PSA_PKT2_PSE_T3_iiT4_")
_CUB_KEYS_DESC = (
    "fNS0_8NullTypeEjE",
    "1",
    "fS6_jNS1_21identity_decomposer_tEEEvPKT1_PSB_PKT2_PSF_T3_iiT4_",
)


# Output of tests/corpus/cutlass/host/tf32_gemm_params.cu for M N K alpha beta =
# 200 136 72 1.5 0.5: grid (2, 2, 1), 128 threads, 65536 bytes of dynamic shared memory,
# the 368-byte Params with placeholder pointers at offsets 64 (A), 112 (B), 192 (C), 272 (D).
CUTLASS_TF32_PARAMS = (
    "c80000008800000048000000020000000200000001000000000000000000000048000000000000000009000000000000"
    "40e5ffffffffffff400000000000000000a0a0a0a0000000480000000000000048000000000000000009000000000000"
    "40e5ffffffffffff400000000000000000b0b0b0b0000000480000000000000020020000000000004004000000000000"
    "e0fdffffffffffffe0fdffffffffffff0011000000000000008800000000000000100100000000000022000000000000"
    "00c0c0c0c0000000880000000000000020020000000000004004000000000000e0fdffffffffffffe0fdffffffffffff"
    "001100000000000000880000000000000010010000000000002200000000000000d0d0d0d00000008800000000000000"
    "0000c03f0000003f00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "5000000000000000000000000000000000000000000000000000000000000000"
)
CUTLASS_TF32_KERNEL = (
    "_ZN7cutlass6KernelINS_4gemm6kernel4GemmINS1_11threadblock13MmaMultistageINS1_9GemmShapeILi128E"
    "Li128ELi16EEENS_9transform11threadblock28PredicatedTileAccessIteratorINS_11MatrixShapeILi128ELi1"
    "6EEEfNS_6layout8RowMajorELi1ENS8_29PitchLinearWarpRakedThreadMapINS_16PitchLinearShapeILi16ELi"
    "128EEELi128ENSG_ILi4ELi8EEELi4EEENS_5ArrayIfLi4ELb1EEELb0ENSD_9NoPermuteEEENS9_25RegularTileAcc"
    "essIteratorISC_fNSD_37RowMajorTensorOpMultiplicandCrosswiseILi32ELi16EEELi0ESJ_Li16EEELNS_4arc"
    "h14CacheOperation4KindE1ENSA_INSB_ILi16ELi128EEEfNSD_11ColumnMajorELi0ESJ_SL_Lb0ESM_EENSO_ISV_f"
    "NSD_40ColumnMajorTensorOpMultiplicandCrosswiseILi32ELi16EEELi1ESJ_Li16EEELSU_1EfSE_NS4_9MmaPol"
    "icyINS1_4warp11MmaTensorOpINS6_ILi64ELi64ELi16EEEfSQ_fSZ_fSE_NS12_17MmaTensorOpPolicyINSS_3Mm"
    "aINS6_ILi16ELi8ELi8EEELi32ENS_10tfloat32_tESE_S18_SW_fSE_NSS_13OpMultiplyAddEEENSB_ILi1ELi1EEE"
    "EELi1ELb0EbEENSB_ILi0ELi0EEES1E_Li1EEELi4ELNS1_23SharedMemoryClearOptionE0EbEENS_8epilogue11th"
    "readblock8EpilogueIS7_S1D_Li1ENS1J_22PredicatedTileIteratorINS1J_26OutputTileOptimalThreadMapI"
    "NS1J_15OutputTileShapeILi128ELi8ELi2ELi1ELi1EEENS1N_ILi1ELi8ELi1ELi1ELi8EEELi128ELi4ELi32EEEfL"
    "b0ESM_Lb0EEENS1I_4warp24FragmentIteratorTensorOpIS14_S17_fSL_SE_EENS1S_20TileIteratorTensorOpI"
    "S14_S17_fSE_EENS1J_18SharedLoadIteratorINS1Q_18CompactedThreadMapEfLi16EEENS1I_6thread17Linea"
    "rCombinationIfLi4EffLNS20_9ScaleType4KindE0ELNS_15FloatRoundStyleE2EfEENSB_ILi0ELi8EEELi2ELi1"
    "EEENS4_30GemmIdentityThreadblockSwizzleILi1EEELb0EEEEEvNT_6ParamsE"
)


# Output of tests/corpus/cutlass/host/fmha_params.cu for 1 batch, 2 heads, 96 queries
# and keys, head dim 64: grid (2, 2, 1), block (32, 4, 1), 18944 bytes of dynamic shared
# memory, 224-byte Params with placeholder pointers at 0 (Q), 8 (K), 16 (V), 64 (O).
CUTLASS_FMHA_PARAMS = (
    "00a0a0a0a000000000b0b0b0b000000000c0c0c0c0000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000d0d0d0d0000000000000000000000000000000000000000000003e40000000"
    "400000006000000060000000000000000000000080000000800000008000000000000000800000004000000040000000"
    "400000000000000000000000000000000030000000000000003000000000000000300000000000000000000000000000"
    "0100000002000000000000000000000000000000000000000000000000000000"
)
CUTLASS_FMHA_KERNEL = (
    "_Z29attention_kernel_batched_implI15AttentionKernelIN7cutlass6half_tENS1_4arch4Sm80ELb1ELi"
    "64ELi64ELi64ELb0ELb0E18DefaultToBatchHookEEvNT_6ParamsE"
)


# Output of tests/corpus/cutlass/host/conv2d_fprop_params.cu for N H W C K R S pad alpha
# beta = 1 12 12 64 64 3 3 1 1.0 0.5: grid (2, 1, 1), 128 threads, 98304 bytes of dynamic
# shared memory, 448-byte Params with placeholder pointers at 184 (activations), 240
# (filters), 312 (C) and 384 (D).
CUTLASS_CONV_PARAMS = (
    "010000000c0000000c000000400000000c0000000c000000400000000300000003000000010000000100000001000000"
    "010000000100000001000000000000000100000001000000020000000100000001000000900000004000000040020000"
    "000000000900000009000000000000004000000000030000002400000000000080000000000000000005000000000000"
    "80f3ffffffffffff400000009000000090000000e4388ee3070000000c000000abaaaaaa0300000000a0a0a0a0000000"
    "40000000c00000004002000009000000400000000000000000120000000000008082ffffffffffff807effffffffffff"
    "00b0b0b0b00000000001000000000000000200000000000000ffffffffffffff00ffffffffffffff0008000000000000"
    "00400000000000000080000000000000001000000000000000c0c0c0c000000000010000000000000002000000000000"
    "00ffffffffffffff00ffffffffffffff0008000000000000004000000000000000800000000000000010000000000000"
    "00d0d0d0d00000000000803f0000003f0000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000100000000000000"
)
CUTLASS_CONV_KERNEL = (
    "_ZN7cutlass6KernelINS_4conv6kernel23ImplicitGemmConvolutionINS1_11threadblock22ImplicitGem"
    "mMultistageINS_4gemm9GemmShapeILi128ELi128ELi64EEENS4_48Conv2dFpropActivationTileAccessIte"
    "ratorOptimizedINS_11MatrixShapeILi128ELi64EEENS_6half_tENS_6layout10TensorNHWCENS_9transfo"
    "rm29PitchLinearWarpRakedThreadMapINS_16PitchLinearShapeILi64ELi128EEELi128ENSH_ILi8ELi4EEE"
    "Li8EEENS_12AlignedArrayISC_Li8ELi16EEEEENSF_11threadblock25RegularTileAccessIteratorISB_SC"
    "_NSD_37RowMajorTensorOpMultiplicandCrosswiseILi16ELi64EEELi0ESK_Li16EEELNS_4arch14CacheOpe"
    "ration4KindE0ENS4_44Conv2dFpropFilterTileAccessIteratorOptimizedINSA_ILi64ELi128EEESC_SE_S"
    "K_SM_Lb0EEENSP_ISX_SC_NSD_40ColumnMajorTensorOpMultiplicandCrosswiseILi16ELi64EEELi1ESK_Li"
    "16EEELSV_1ENS6_11threadblock9MmaPolicyINS6_4warp11MmaTensorOpINS7_ILi64ELi64ELi64EEESC_SR_"
    "SC_S10_fNSD_8RowMajorENS14_17MmaTensorOpPolicyINST_3MmaINS7_ILi16ELi8ELi16EEELi32ESC_S17_S"
    "C_NSD_11ColumnMajorEfS17_NST_13OpMultiplyAddEEENSA_ILi1ELi1EEEEELi1ELb0EbEENSA_ILi0ELi0EEE"
    "S1H_Li1EEELi3EbEENS_8epilogue11threadblock8EpilogueIS8_S1G_Li1ENS1L_22PredicatedTileIterat"
    "orINS1L_26OutputTileOptimalThreadMapINS1L_15OutputTileShapeILi128ELi8ELi2ELi1ELi1EEENS1P_I"
    "Li1ELi8ELi1ELi1ELi8EEELi128ELi4ELi32EEEfLb0ENSD_9NoPermuteELb0EEENS1K_4warp24FragmentItera"
    "torTensorOpIS16_S1A_fNS_5ArrayIfLi4ELb1EEES17_EENS1V_20TileIteratorTensorOpIS16_S1A_fS17_E"
    "ENS1L_18SharedLoadIteratorINS1S_18CompactedThreadMapEfLi16EEENS1K_6thread17LinearCombinati"
    "onIfLi4EffLNS25_9ScaleType4KindE0ELNS_15FloatRoundStyleE2EfEENSA_ILi0ELi8EEELi2ELi1EEENS12"
    "_30GemmIdentityThreadblockSwizzleILi1EEELNS1_8OperatorE0ENS1_17Conv2dProblemSizeELNS1_9Gro"
    "upModeE0EEEEEvNT_6ParamsE"
)


# Output of tests/corpus/cutlass/host/mixed_dtype_gemm_params.cu for M N K alpha beta =
# 256 144 256 1.0 0.5 (sm_count 2): grid (1, 2, 1), 384 threads, 232448 bytes of dynamic
# shared memory, 2304-byte Params holding four TMA descriptors (interpreter layout) whose
# global addresses are placeholders at 128 (B, e4m3), 384 (A), 1408 (C) and 1664 (D).
CUTLASS_MIXED_PARAMS = (
    "0000000090000000000100000001000001000000157f0000107cc29f157f0000803ed39f157f0000e455300000000000"
    "40099dbfff7f0000986ad49f157f00000400000000000000107cc29f157f000001000000000000000000000000000000"
    "0100000000000000803ed39f157f0000b8089dbfff7f0000c0089dbfff7f000000b0b0b0b00000000300000000000000"
    "02000000000000000000000050414d540001000090000000010000000100000001000000000000000001000000000000"
    "000000000000000000000000000000000000000000000000400000008000000001000000010000000100000001000000"
    "01000000010000000100000001000000201810f0000000000000000000000000ff07ff07000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000010000000000"
    "c0f5000000000000c0f50000000000000010000000000000000000000000000001000000000000000000010000000000"
    "00a0a0a0a0000000030000000100000003000000000000000000000050414d5400010000000100000100000001000000"
    "010000000000000000020000000000000000000000000000000000000000000000000000000000004000000080000000"
    "0100000001000000010000000100000001000000010000000100000001000000201810f0000000000000000000000000"
    "ff07ff070000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000010000000000c0f5000000000000c0f500000000000000100000000000000000000000000000"
    "010000000000000000000100000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000006000000100000000000000000100000000000000000000000000000001000000000000"
    "000000000000000000000000000000000000004000000000111002000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000003fd00000000000000000000000"
    "000000000000000000000000000000000000803f00010000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000c0c0c0c0000000030000000600000003000000000000000000000050414d54"
    "900000000001000001000000010000000100000000000000200100000000000000000000000000000000000000000000"
    "000000000000000040000000200000000100000001000000010000000100000001000000010000000100000001000000"
    "780000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000d0d0d0d00000000300000006000000"
    "03000000000000000000000050414d549000000000010000010000000100000001000000000000002001000000000000"
    "000000000000000000000000000000000000000000000000400000002000000001000000010000000100000001000000"
    "010000000100000001000000010000007800000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "002000007479706549634500000000005374356374797065497745000000000000000000000000000000000000000000"
    "0000000000000000000000000000000070756e6374740000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000020000000000000000000000"
    "000000000000000000000000000000000000000000000000010000000000000000000000000000000100000000000000"
    "000000000000000004000000000000000000000000000000020000000000000002000000000000000000000000000000"
    "010000000000000004000000000000000000000001000000020000000200000001000000010000000100000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
)
CUTLASS_MIXED_KERNEL = (
    "_ZN7cutlass13device_kernelINS_4gemm6kernel13GemmUniversalIN4cute5tupleIJiiiiEEENS1_10colle"
    "ctive13CollectiveMmaINS1_49MainloopSm90TmaGmmaRmemAWarpSpecializedMixedInputILi8ENS5_IJNS4"
    "_1CILi1EEESB_SB_EEENS1_35KernelTmaWarpSpecializedCooperativeEEENS5_IJNSA_ILi128EEESF_NSA_I"
    "Li64EEEEEENS5_IJNS_12float_e4m3_tEEEENS5_IJlSB_lEEENS_6half_tESK_NS4_8TiledMMAINS4_8MMA_At"
    "omIJNS4_4SM904GMMA26MMA_64x128x16_F32F16F16_RSILNSP_5MajorE0ELSR_0ELNSP_7ScaleInE1ELSS_1EE"
    "EEEENS4_6LayoutINS5_IJNSA_ILi2EEESB_SB_EEENS5_IJSB_NSA_ILi0EEESY_EEEEENS5_IJNS4_10Undersco"
    "reES11_S11_EEEEENS4_13SM90_TMA_LOADENS4_14ComposedLayoutINS4_7SwizzleILi2ELi4ELi3EEENS4_18"
    "smem_ptr_flag_bitsILi8EEENSV_INS5_IJNSA_ILi8EEESG_EEENS5_IJSG_SB_EEEEEEENS4_9Copy_AtomIJNS"
    "4_39AutoVectorizingCopyWithAssumedAlignmentILi128EEESI_EEENS4_8identityES14_NS15_INS16_ILi"
    "3ELi4ELi3EEENS18_ILi16EEES1D_EEvS1J_EENS_8epilogue10collective18CollectiveEpilogueINS1O_22"
    "Sm90TmaWarpSpecializedILi4ELi2ELi16ELb1ELb0EEEJSH_NS5_IJSF_NSA_ILi32EEEEEESL_NS5_IJSB_llEE"
    "ESL_S1V_NS1O_6fusion15FusionCallbacksIS1S_NS1W_17LinearCombinationISL_fSL_fLNS_15FloatRoun"
    "dStyleE2EEESH_S1U_JEEES14_NS15_IS1K_S1L_NSV_INS5_IJSG_S1A_EEENS5_IJSB_SG_EEEEEEENS4_17SM75"
    "_U16x8_LDSM_TENS4_14SM90_TMA_STOREES25_NS4_17SM90_U16x8_STSM_TENS1F_IJNS4_17SM90_U32x4_STS"
    "M_NESL_EEEvEEEvvEEEEvNT_6ParamsE"
)


def cutlass_launches():
    """CUTLASS example 14 (Ampere TF32 tensor-op GEMM) with the Params its host code
    builds (tests/corpus/cutlass/host/tf32_gemm_params.cu)."""
    m, n, k = 200, 136, 72
    ptr = {"A": (64, m * k, 190), "B": (112, n * k, 191), "C": (192, m * n, 192)}
    pointers = [
        dict(arr("float32", size, "random", seed, low=-1.0, high=1.0), offset=off)
        for off, size, seed in ptr.values()
    ] + [dict(arr("float32", m * n), offset=272)]
    blob = {"kind": "blob", "hex": "".join(CUTLASS_TF32_PARAMS), "pointers": pointers}
    return {
        "cutlass/ampere_tf32_gemm.sm80.ptx": [
            L(
                CUTLASS_TF32_KERNEL,
                [2, 2, 1],
                128,
                [blob],
                "ref_cutlass_tf32_gemm",
                65536,
                problem=[m, n, k],
                alpha=1.5,
                beta=0.5,
            )
        ],
        "cutlass/ampere_fmha.sm80.ptx": [
            L(
                CUTLASS_FMHA_KERNEL,
                [2, 2, 1],
                [32, 4, 1],
                [
                    {
                        "kind": "blob",
                        "hex": "".join(CUTLASS_FMHA_PARAMS),
                        "pointers": [
                            dict(
                                arr("float16", 96 * 2 * 64, "random", 195 + i, low=-1.0, high=1.0),
                                offset=8 * i,
                            )
                            for i in range(3)
                        ]
                        + [dict(arr("float16", 96 * 2 * 64), offset=64)],
                    }
                ],
                "ref_cutlass_fmha",
                18944,
                bmhk=[1, 96, 2, 64],
            )
        ],
        "cutlass/ampere_conv2d_fprop.sm80.ptx": [
            L(
                CUTLASS_CONV_KERNEL,
                [2, 1, 1],
                128,
                [
                    {
                        "kind": "blob",
                        "hex": "".join(CUTLASS_CONV_PARAMS),
                        "pointers": [
                            dict(
                                arr("float16", 12 * 12 * 64, "random", 200, low=-1.0, high=1.0),
                                offset=184,
                            ),
                            dict(
                                arr("float16", 64 * 9 * 64, "random", 201, low=-1.0, high=1.0),
                                offset=240,
                            ),
                            dict(
                                arr("float32", 12 * 12 * 64, "random", 202, low=-1.0, high=1.0),
                                offset=312,
                            ),
                            dict(arr("float32", 12 * 12 * 64), offset=384),
                        ],
                    }
                ],
                "ref_cutlass_conv2d_fprop",
                98304,
                nhwc_krs_pad=[1, 12, 12, 64, 64, 3, 3, 1],
                alpha=1.0,
                beta=0.5,
            )
        ],
        # Hopper: TMA + mbarrier producer warp, two consumer warpgroups with register-A
        # wgmma (fp8 B converted to half in registers), TMA-store epilogue
        "cutlass/hopper_mixed_dtype_gemm.sm90a.ptx": [
            L(
                CUTLASS_MIXED_KERNEL,
                [1, 2, 1],
                384,
                [
                    {
                        "kind": "blob",
                        "hex": "".join(CUTLASS_MIXED_PARAMS),
                        "pointers": [
                            dict(
                                arr("uint8", 144 * 256, "randint", 210, low=0x18, high=0x48),
                                offset=128,
                            ),
                            dict(
                                arr("float16", 256 * 256, "random", 211, low=-1.0, high=1.0),
                                offset=384,
                            ),
                            dict(
                                arr("float16", 256 * 144, "random", 212, low=-1.0, high=1.0),
                                offset=1408,
                            ),
                            dict(arr("float16", 256 * 144), offset=1664),
                        ],
                    }
                ],
                "ref_cutlass_mixed_gemm",
                232448,
                problem=[256, 144, 256],
                alpha=1.0,
                beta=0.5,
            )
        ],
    }


def library_launches():
    """Library kernels launched as their host code launches them (see
    docs/running-library-kernels.md): CUB's single-tile radix sort (one CTA of the
    policy's 256 threads sorts up to a tile; the decomposer is an empty struct)."""
    out = cutlass_launches()
    for sm in ("80", "90"):
        hub, order, tail = _CUB_PAIRS
        pairs = _CUB_SINGLE_TILE.format(sm=sm, hub=hub, order=order, tail=tail)
        hub, order, tail = _CUB_KEYS_DESC
        keys = _CUB_SINGLE_TILE.format(sm=sm, hub=hub, order=order, tail=tail)
        n = 1500
        out[f"cub/radix_sort.sm{sm}.ptx"] = [
            L(
                pairs,
                1,
                256,
                [
                    arr("uint32", n, "randint", 180, low=0, high=2**32 - 1),
                    arr("uint32", n),
                    arr("int32", n, "iota"),
                    arr("int32", n),
                    sc("uint32", n),
                    sc("int32", 0),
                    sc("int32", 32),
                    sc("uint8", 0),
                ],
                "ref_cub_sort_pairs",
            ),
            L(
                keys,
                1,
                256,
                [
                    arr("float32", n, "random", 181, low=-100.0, high=100.0),
                    arr("float32", n),
                    NULL,
                    NULL,
                    sc("uint32", n),
                    sc("int32", 0),
                    sc("int32", 32),
                    sc("uint8", 0),
                ],
                "ref_cub_sort_keys_descending",
            ),
        ]
    return out


def layer_norm_launches():
    """Triton layer norm forward/backward: rows of n (a multiple of 16, as the
    compile-time divisibility hint promises) inside rows of `stride` elements."""
    out = {}
    # file suffix -> (rows, block threads of the compiled num_warps, n, stride)
    shapes = {
        "fwd.sm80": (6, 128, 208, 224),
        "fwd.sm90a": (4, 256, 1008, 1024),
        "bwd.sm80": (6, 128, 208, 224),
        "bwd.sm90a": (5, 128, 496, 512),
    }
    for k, (rows, block, n, stride) in shapes.items():
        seed = 80 + 10 * len(out)
        size = rows * stride
        if k.startswith("fwd"):
            args = [
                arr("float32", size, "random", seed, low=-2.0, high=2.0),
                arr("float32", size),
                arr("float32", n, "random", seed + 1, low=0.5, high=1.5),
                arr("float32", n, "random", seed + 2, low=-1.0, high=1.0),
                arr("float32", rows),
                arr("float32", rows),
                sc("int32", stride),
                sc("int32", n),
                sc("float32", 1e-5),
            ]
        else:
            args = [
                arr("float32", size, "random", seed, low=-2.0, high=2.0),
                arr("float32", size, "random", seed + 1, low=-1.0, high=1.0),
                arr("float32", size),
                arr("float32", n, "random", seed + 2, low=0.5, high=1.5),
                arr("float32", rows, "random", seed + 3, low=-0.1, high=0.1),
                arr("float32", rows, "random", seed + 4, low=0.5, high=2.0),
                arr("float32", rows * n),
                arr("float32", rows * n),
                sc("int32", stride),
                sc("int32", n),
            ]
        kernel = "layer_norm_" + k.split(".")[0]
        out[f"triton/layer_norm_{k}.ptx"] = [
            L(kernel, rows, block, args + [NULL, NULL], f"ref_tt_{kernel}")
        ]
    return out


_SCALAR_WIDTH = {
    "uint8": 8,
    "int32": 32,
    "uint32": 32,
    "float32": 32,
    "int64": 64,
    "uint64": 64,
    "float64": 64,
}


def check_launch(path, entries, launch):
    names = dict(entries)
    if launch["kernel"] is None:  # numba: the single (mangled) entry
        assert len(entries) == 1, path
        launch["kernel"] = entries[0][0]
    params = names[launch["kernel"]]
    args = launch["args"]
    assert len(params) == len(args), (
        f"{path}:{launch['kernel']}: {len(params)} params, {len(args)} args"
    )
    for t, a in zip(params, args, strict=False):
        width = int(re.sub(r"\D", "", t) or 0)
        if a["kind"] == "blob":
            assert t.startswith("b8["), f"{path}: Params bytes passed to .{t} param"
        elif a["kind"] == "array":
            assert width == 64, f"{path}: array passed to .{t} param"
        else:
            assert width == _SCALAR_WIDTH[a["dtype"]], f"{path}: {a['dtype']} passed to .{t} param"


# ----------------------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--only", default="nvcc,cub,cutlass,triton,numba,llvm")
    ap.add_argument("--no-manifest", action="store_true")
    a = ap.parse_args()
    todo = a.only.split(",")
    produced = []
    for name, fn in [
        ("nvcc", gen_nvcc),
        ("cub", gen_cub),
        ("cutlass", gen_cutlass),
        ("triton", gen_triton),
        ("numba", gen_numba),
        ("llvm", gen_llvm),
    ]:
        if name in todo:
            print(f"== {name}", flush=True)
            produced += fn()

    manifest_path = os.path.join(HERE, "manifest.json")
    old = {}
    if os.path.exists(manifest_path):
        old = {e["path"]: e for e in json.load(open(manifest_path))["files"]}
    cl = cuda_launches()
    ol = other_launches()
    rows, entries_out, failures = [], dict(old), 0
    for rel, producer, cfg in produced:
        text = open(os.path.join(HERE, rel)).read()
        target = ptx_target(text)
        ok, msg = ptxas_ok(os.path.join(HERE, rel), target)
        failures += not ok
        lines = text.count("\n")
        ents = ptx_entries(text)
        tc = bool(TENSOR_CORE_RE.search(text))
        if producer == "nvcc":
            launches = json.loads(json.dumps(cl.get(os.path.basename(rel).split(".")[0], [])))
        else:
            launches = json.loads(json.dumps(ol.get(rel, [])))
        for l in launches:
            if rel in TRITON_SHARED and not l["shared_bytes"]:
                l["shared_bytes"] = TRITON_SHARED[rel]
            check_launch(rel, ents, l)
        entries_out[rel] = {
            "path": rel,
            "producer": producer,
            "config": cfg,
            "target": target,
            "lines": lines,
            "kernels": [e[0] for e in ents],
            "params": {e[0]: e[1] for e in ents},
            "tensor_core": tc,
            "ptxas_ok": ok,
            "launches": launches,
        }
        rows.append((rel, producer, lines, ok, msg))

    print(f"\n{'file':<44} {'producer':<8} {'lines':>7}  ptxas")
    for rel, producer, lines, ok, msg in rows:
        print(f"{rel:<44} {producer:<8} {lines:>7}  {'ok' if ok else 'FAIL'}")
        if not ok:
            print("    " + msg.replace("\n", "\n    "))
    print(f"{len(rows)} files, {sum(r[2] for r in rows)} lines, {failures} rejected by ptxas")
    if not a.no_manifest:
        files = [entries_out[k] for k in sorted(entries_out)]
        with open(manifest_path, "w") as f:
            json.dump({"format": 1, "files": files}, f, indent=1)
            f.write("\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
