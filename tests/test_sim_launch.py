"""The interpreter's harness: launch (arguments, shapes, batching, errors), memory spaces
(bounds, alignment, read-only, per-CTA shared and per-thread local memory), the
differential checker (what it reports and when it agrees), and uniformity claims by
register name (scope-renamed registers included)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ptxopt.sim import SimError, differential, launch

HEAD = ".version 8.0\n.target sm_80\n.address_size 64\n"


def kernel(body: str, params: str = ".param .u64 out", decls: str = "") -> str:
    return (
        HEAD
        + decls
        + f".visible .entry k({params})\n{{\n"
        + "\t.reg .pred %p<4>;\n\t.reg .b32 %r<16>;\n\t.reg .b64 %rd<8>;\n\t.reg .f32 %f<4>;\n"
        + "\t.reg .f64 %fd<4>;\n\t.reg .b16 %h<4>;\n"
        + body
        + "\n\tret;\n}\n"
    )


# out[linear thread index] = value in %r5
STORE = """
\tld.param.u64 %rd1, [out];
\tmov.u32 %r10, %tid.x;
\tmov.u32 %r11, %ntid.x;
\tmov.u32 %r12, %ctaid.x;
\tmad.lo.u32 %r13, %r12, %r11, %r10;
\tmul.wide.u32 %rd2, %r13, 4;
\tadd.s64 %rd3, %rd1, %rd2;
\tst.global.u32 [%rd3], %r5;"""


def test_scalar_parameters_of_every_kind_reach_the_kernel() -> None:
    params = (".param .u64 out, .param .f32 a, .param .f64 b, .param .u16 c, .param .s32 d, "
              ".param .u64 e")  # fmt: skip
    body = """
\tld.param.u64 %rd1, [out];
\tld.param.f32 %f1, [a];
\tld.param.f64 %fd1, [b];
\tld.param.u16 %h1, [c];
\tld.param.s32 %r1, [d];
\tld.param.u64 %rd2, [e];
\tst.global.f32 [%rd1], %f1;
\tst.global.f64 [%rd1+8], %fd1;
\tst.global.u16 [%rd1+16], %h1;
\tst.global.s32 [%rd1+20], %r1;
\tst.global.u64 [%rd1+24], %rd2;"""
    out = np.zeros(4, np.uint64)
    launch(kernel(body, params), "k", 1, 1, [out, 1.5, -2.25, 0x1FFFF, -7, 2**64 - 3])
    raw = out.view(np.uint8)
    assert raw[:4].view(np.float32)[0] == np.float32(1.5)
    assert raw[8:16].view(np.float64)[0] == -2.25
    assert raw[16:18].view(np.uint16)[0] == 0xFFFF  # truncated to the parameter's width
    assert raw[20:24].view(np.int32)[0] == -7
    assert int(out[3]) == 2**64 - 3


def test_grid_and_block_shapes_and_statistics() -> None:
    body = """
\tmov.u32 %r1, %tid.x;
\tmov.u32 %r2, %tid.y;
\tmov.u32 %r3, %ctaid.y;
\tmad.lo.u32 %r5, %r2, 100, %r1;
\tmad.lo.u32 %r5, %r3, 10000, %r5;
\tld.param.u64 %rd1, [out];
\tmov.u32 %r6, %ntid.x;
\tmov.u32 %r7, %ntid.y;
\tmul.lo.u32 %r8, %r6, %r7;
\tmov.u32 %r9, %ctaid.x;
\tmov.u32 %r12, %nctaid.x;
\tmad.lo.u32 %r9, %r3, %r12, %r9;
\tmad.lo.u32 %r13, %r2, %r6, %r1;
\tmad.lo.u32 %r13, %r9, %r8, %r13;
\tmul.wide.u32 %rd2, %r13, 4;
\tadd.s64 %rd3, %rd1, %rd2;
\tst.global.u32 [%rd3], %r5;"""
    out = np.zeros(2 * 3 * 5 * 3, np.uint32)
    res = launch(kernel(body), "k", (2, 3), (5, 3), [out])
    want = [cy * 10000 + ty * 100 + tx for cy in range(3) for cx in range(2) for ty in range(3)
            for tx in range(5)]  # fmt: skip
    assert out.tolist() == want
    assert res.grid == (2, 3, 1) and res.block == (5, 3, 1)
    assert res.lane_instructions == 90 * 18  # 17 instructions and ret, every thread
    assert res.warp_instructions == 6 * 18  # one (partial) warp per CTA
    assert "warp-instructions" in res.summary()


@pytest.mark.parametrize("batch", [None, 64])
def test_batches_of_ctas_give_the_same_result(batch: int | None) -> None:
    out = np.zeros(40 * 32, np.uint32)
    res = launch(kernel("\tmov.u32 %r5, %ctaid.x;" + STORE), "k", 40, 32, [out],
                 max_batch_threads=batch)  # fmt: skip
    assert out.tolist() == [c for c in range(40) for _ in range(32)]
    assert res.batches == (1 if batch is None else 20)


@pytest.mark.parametrize(
    "grid,block,args,message",
    [
        (1, 1025, None, "exceeds 1024"),
        (0, 32, None, "must be positive"),
        ((1, 1, 1, 1), 32, None, "1 to 3 dimensions"),
        (1, 32, [], "takes 1 parameters, got 0"),
    ],
)
def test_launch_errors(grid: Any, block: Any, args: Any, message: str) -> None:
    with pytest.raises(SimError, match=message):
        launch(kernel(STORE), "k", grid, block, [np.zeros(64, np.uint32)] if args is None else args)


def test_unknown_kernel_names_the_entries() -> None:
    with pytest.raises(SimError, match=r"no kernel entry named 'nope' \(entries: k\)"):
        launch(kernel(STORE), "nope", 1, 1, [np.zeros(1, np.uint32)])


def test_out_of_bounds_global_store_names_the_thread() -> None:
    out = np.zeros(31, np.uint32)  # one element short
    with pytest.raises(SimError, match=r"out-of-bounds 4-byte access .* thread \(31, 0, 0\)"):
        launch(kernel("\tmov.u32 %r5, 1;" + STORE), "k", 1, 32, [out])


def test_misaligned_access_is_an_error() -> None:
    body = "\tld.param.u64 %rd1, [out];\n\tld.global.u32 %r1, [%rd1+2];"
    with pytest.raises(SimError, match="misaligned 4-byte access"):
        launch(kernel(body), "k", 1, 1, [np.zeros(4, np.uint32)])


def test_store_to_const_memory_is_an_error() -> None:
    decls = ".const .align 4 .u32 table[2] = {7, 9};\n"
    body = "\tmov.u64 %rd1, table;\n\tmov.u32 %r1, 1;\n\tst.const.u32 [%rd1], %r1;"
    with pytest.raises(SimError, match="read-only"):
        launch(kernel(body, decls=decls), "k", 1, 1, [np.zeros(1, np.uint32)])


def test_module_variables_are_initialized_and_reported() -> None:
    decls = ".global .align 4 .u32 g[3] = {5, 6, 7};\n"
    body = ("\tld.global.u32 %r1, [g+4];\n\tmul.lo.u32 %r1, %r1, 10;\n\tst.global.u32 [g], %r1;"
            "\n\tmov.u32 %r5, %r1;" + STORE)  # fmt: skip
    out = np.zeros(1, np.uint32)
    res = launch(kernel(body, decls=decls), "k", 1, 1, [out])
    assert out[0] == 60
    assert res.globals["g"].view(np.uint32).tolist() == [60, 6, 7]


def test_initializers_are_laid_out_along_the_dimensions() -> None:
    """Each level of braces is one dimension, a short level is padded with zeros (an
    empty ``{}`` too), an unsized array takes the initializer's length, vectors hold
    their components in order, and ``sym+n`` items are one address."""
    decls = (
        ".global .align 4 .u32 a[2][3] = {{1}, {4, 5}};\n"
        ".global .align 4 .u32 b[3][2] = {{}, {3, 4}};\n"
        ".global .align 4 .u32 c[] = {7, 8, 9};\n"
        ".global .align 8 .v2 .u32 d[2] = {{1, 2}, {3, 4}};\n"
        ".global .align 4 .b8 e[6] = {1, 2, 300};\n"
        ".global .align 8 .u64 f[3] = {c, c+8, generic(c)+4};\n"
        ".global .align 4 .f32 h[2][2] = {{1.5}, {0f40000000, 2.0}};\n"
    )
    res = launch(kernel("", decls=decls), "k", 1, 1, [np.zeros(1, np.uint32)])
    g = res.globals
    assert g["a"].view(np.uint32).tolist() == [1, 0, 0, 4, 5, 0]
    assert g["b"].view(np.uint32).tolist() == [0, 0, 3, 4, 0, 0]
    assert g["c"].view(np.uint32).tolist() == [7, 8, 9]
    assert g["d"].view(np.uint32).tolist() == [1, 2, 3, 4]
    assert g["e"].tolist() == [1, 2, 300 % 256, 0, 0, 0]
    base = int(g["f"].view(np.uint64)[0])
    assert g["f"].view(np.uint64).tolist() == [base, base + 8, base + 4] and base > 0
    assert g["h"].view(np.float32).tolist() == [1.5, 0.0, 2.0, 2.0]
    # every layout above is the one in the .nv.global.init section ptxas 13.0 writes
    # for the same declarations (readelf -x, 2026-11-24)


def test_shared_memory_is_per_cta_and_local_memory_per_thread() -> None:
    decls = ".shared .align 4 .u32 sh[1];\n"
    body = (
        """
\t.local .align 4 .u32 mine[1];
\tmov.u32 %r1, %ctaid.x;
\tmov.u32 %r2, %tid.x;
\tsetp.eq.u32 %p1, %r2, 0;
\t@%p1 st.shared.u32 [sh], %r1;
\tst.local.u32 [mine], %r2;
\tbar.sync 0;
\tld.shared.u32 %r3, [sh];
\tld.local.u32 %r4, [mine];
\tmad.lo.u32 %r5, %r3, 1000, %r4;"""
        + STORE
    )
    out = np.zeros(3 * 64, np.uint32)
    launch(kernel(body, decls=decls), "k", 3, 64, [out])
    assert out.tolist() == [c * 1000 + t for c in range(3) for t in range(64)]


def test_dynamic_shared_memory_size_comes_from_the_launch() -> None:
    decls = ".extern .shared .align 16 .b8 dyn[];\n"
    body = (
        "\tmov.u32 %r1, 12;\n\tst.shared.u32 [dyn+12], %r1;\n\tld.shared.u32 %r5, [dyn+12];" + STORE
    )
    out = np.zeros(1, np.uint32)
    launch(kernel(body, decls=decls), "k", 1, 1, [out], shared_bytes=16)
    assert out[0] == 12
    with pytest.raises(SimError, match="shared size 8"):
        launch(kernel(body, decls=decls), "k", 1, 1, [out], shared_bytes=8)


def test_step_budget_stops_an_infinite_loop() -> None:
    body = "L:\n\tbra.uni L;"
    with pytest.raises(SimError, match="step budget of 100 exceeded"):
        launch(kernel(body), "k", 1, 1, [np.zeros(1, np.uint32)], max_steps=100)


# -- differential ------------------------------------------------------------------------

A = kernel("\tmov.u32 %r5, %tid.x;" + STORE)
B = kernel("\tmov.u32 %r5, %tid.x;\n\tsetp.eq.u32 %p1, %r5, 5;\n\t@%p1 mov.u32 %r5, 99;" + STORE)
C = kernel("\tmov.u32 %r5, %tid.x;\n\tmov.u32 %r1, 0;\n\tst.global.u32 [%rd7+0], %r1;" + STORE)


def _zeros(seed: int) -> list[Any]:
    return [np.zeros(64, np.uint32)]


def test_differential_reports_the_first_differing_element() -> None:
    res = differential(A, B, "k", 1, 32, _zeros, trials=2)
    assert not res.ok and not res
    assert (res.arg, res.index, int(res.a_value), int(res.b_value)) == (0, 5, 5, 99)
    assert res.trials == 1 and res.seed == 0 and res.shape == (1, 32)
    assert "argument 0 differs first at element 5" in str(res)


def test_differential_agrees_on_identical_behaviour_over_all_shapes() -> None:
    seen: list[tuple[int, Any, Any]] = []

    def make(seed: int, grid: Any, block: Any) -> list[Any]:
        seen.append((seed, grid, block))
        return [np.zeros(64, np.uint32)]

    res = differential(A, A, "k", [(1, 32), (2, 7)], None, make, trials=2)
    assert res.ok and res.trials == 4 and res.both_failed == 0
    assert seen == [(0, 1, 32), (1, 1, 32), (0, 2, 7), (1, 2, 7)]
    assert res.runs == [(1, 32, 0), (1, 32, 1), (2, 7, 0), (2, 7, 1)]


def test_differential_one_side_failing_is_a_difference() -> None:
    res = differential(A, C, "k", 1, 32, _zeros, trials=1)
    assert not res.ok and "A ran; B failed" in res.message


def test_differential_the_same_failure_on_both_sides_is_counted() -> None:
    res = differential(C, C, "k", 1, 32, _zeros, trials=2)
    assert res.ok and res.both_failed == 2 and "failed the same way" in res.message


def test_differential_needs_inputs_and_accepts_each_maker_signature() -> None:
    with pytest.raises(ValueError):
        differential(A, A, "k", 1, 32)
    assert differential(A, A, "k", 1, 32, lambda: [np.zeros(32, np.uint32)]).ok
    assert differential(A, A, "k", 1, 32, lambda s: [np.zeros(32, np.uint32)], trials=1).ok


# -- claims by register name --------------------------------------------------------------

SCOPED = kernel(
    """
\tmov.u32 %r1, %ctaid.x;
\t{
\t.reg .b32 %r1;
\tmov.u32 %r1, %tid.x;
\tadd.u32 %r5, %r1, 0;
\t}
\tadd.u32 %r6, %r1, 1;"""
    + STORE
)


def test_name_claims_follow_the_scope_of_each_register() -> None:
    """The outer %r1 (CTA id) is uniform; the inner, shadowing %r1 (thread id) is not:
    a claim on the name covers both, and only the inner one is refuted."""
    res = launch(SCOPED, "k", 2, 32, [np.zeros(64, np.uint32)], uniform_claims={"k": ["%r1"]})
    assert res.violations
    lines = {v.location.split(":")[1] for v in res.violations}
    text = SCOPED.splitlines()
    inner = {  # the inner %r1 is written and read there; the outer one is never refuted
        str(i)
        for i, ln in enumerate(text, 1)
        if ln.strip() in ("mov.u32 %r1, %tid.x;", "add.u32 %r5, %r1, 0;")
    }
    assert lines == inner and len(inner) == 2
    v = res.violations[0]
    assert v.function == "k" and len(v.values) == 32 and "not uniform in warp" in str(v)


def test_claims_in_other_functions_are_not_checked_here() -> None:
    res = launch(A, "k", 1, 32, [np.zeros(32, np.uint32)], uniform_claims={"other": ["%r5"]})
    assert not res.violations
    res = launch(A, "k", 1, 32, [np.zeros(32, np.uint32)], uniform_claims={"k": ["%r5"]})
    assert res.violations


def test_several_module_variables_keep_their_own_storage() -> None:
    decls = (".global .align 4 .u32 g[3] = {5, 6, 7};\n"
             ".global .align 8 .u64 h[2] = {11, 12};\n")  # fmt: skip
    body = ("\tld.global.u32 %r1, [g+8];\n\tld.global.u64 %rd5, [h+8];\n"
            "\tcvt.u32.u64 %r2, %rd5;\n\tadd.u32 %r5, %r1, %r2;" + STORE)  # fmt: skip
    out = np.zeros(1, np.uint32)
    res = launch(kernel(body, decls=decls), "k", 1, 1, [out])
    assert out[0] == 19
    assert res.globals["h"].view(np.uint64).tolist() == [11, 12]


SCOPED_JOIN = kernel(
    """
\tmov.u32 %r1, %ctaid.x;
\t{
\t.reg .b32 %r1;
\tmov.u32 %r2, %tid.x;
\tand.b32 %r3, %r2, 1;
\tsetp.eq.u32 %p1, %r3, 1;
\tmov.u32 %r1, 5;
\t@%p1 bra X;
\tmov.u32 %r1, 6;
X:
\tmov.u32 %r6, 0;
\tadd.u32 %r5, %r1, %r6;
\t}
\tadd.u32 %r7, %r1, 1;"""
    + STORE
)


def test_a_phi_claim_checks_the_scoped_register_at_its_join() -> None:
    """The phi of the inner, shadowing %r1 merges 5 and 6: its claim is refuted where the
    lanes meet (X's first instruction) and where it is read, never on the outer %r1."""
    from ptxopt.ir.lift import lift_module
    from ptxopt.ptx.parser import parse

    fn = lift_module(parse(SCOPED_JOIN)).func("k")
    phi = next(p.result for b in fn.blocks for p in b.phis)
    out = np.zeros(32, np.uint32)
    res = launch(SCOPED_JOIN, "k", 1, 32, [out], uniform_claims={"k": [phi]})
    text = SCOPED_JOIN.splitlines()
    at = {s: i for i, ln in enumerate(text, 1) for s in [ln.strip()]}
    lines = {int(v.location.split(":")[1]) for v in res.violations}
    assert lines == {at["mov.u32 %r6, 0;"], at["add.u32 %r5, %r1, %r6;"]}
    assert (out == np.where(np.arange(32) % 2 == 1, 5, 6)).all()


def test_differential_reference_runs_side_a_once() -> None:
    """A reference dict records A's outcome per shape and seed; later calls compare
    against it without running A (here A is replaced by text that would fail)."""
    ref: dict[Any, Any] = {}
    assert differential(A, A, "k", [(1, 32), (2, 7)], None, _zeros, trials=2, reference=ref).ok
    assert len(ref) == 4
    again = differential(C, A, "k", [(1, 32), (2, 7)], None, _zeros, trials=2, reference=ref)
    assert again.ok and again.trials == 4
    diff = differential(C, B, "k", 1, 32, _zeros, trials=1, reference=ref)
    assert not diff.ok and "element 5" in diff.message
    failing: dict[Any, Any] = {}
    differential(C, C, "k", 1, 32, _zeros, trials=1, reference=failing)
    assert differential(A, A, "k", 1, 32, _zeros, trials=1, reference=failing).message.startswith(
        "grid=1 block=32 seed=0: A failed"
    )
