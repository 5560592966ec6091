"""Device functions: generated ``.func`` bodies and the call sequences that reach them.

A function reads only its parameters (no special registers, no memory), so its result
is uniform when its arguments are.  Calls use nvcc's shape: a ``{ }`` scope declaring
``.param`` symbols (the same names at every call site), ``st.param`` of the
arguments, ``call`` (``call.uni`` where the caller is uniform), ``ld.param`` of the
result.  Functions may call the ones generated before them (no recursion) and may
return early under a predicate after a provisional result is stored.
"""

from __future__ import annotations

from fuzz.kernelgen.arith import write
from fuzz.kernelgen.core import CLASSES, Ctx, FuncSig, Gen, Scope, feature

PARAM_TYPE = {"r": ".b32", "rd": ".b64", "f": ".f32", "fd": ".f64"}
FUNC_POOL = {"r": 4, "rd": 2, "f": 2, "fd": 1, "h": 1, "p": 2}  # p last: set from r


def _init_from(g: Gen, reg: str, cls: str, params: list[tuple[str, str]]) -> None:
    """Define pool register ``reg`` from a parameter of the same class, else an edge
    immediate (predicates: a comparison of an integer pool register)."""
    same = [r for r, c in params if c == cls]
    if same and g.chance(0.7):
        g.emit(f"mov{CLASSES[cls][0]} {reg}, {g.rng.choice(same)};")
    elif cls == "p":
        g.emit(f"setp.ne.u32 {reg}, {g.src('r')}, {g.int_imm(32)};")
    elif cls in ("f", "fd"):
        g.emit(f"mov{CLASSES[cls][0]} {reg}, {g.operand(cls, 2.0)};")
    else:
        g.emit(f"mov.b{CLASSES[cls][2]} {reg}, {g.int_imm(CLASSES[cls][2])};")


def make_function(g: Gen, index: int) -> list[str]:
    """Generate ``.func`` number ``index``; returns its text and records its signature."""
    name = f"fk_f{index}"
    nparams = g.rng.randint(1, 3)
    pcls = tuple(g.choice(PARAM_TYPE) for _ in range(nparams))
    rcls = g.choice(PARAM_TYPE)
    outer = g.scope
    g.scope = sc = Scope(name)
    params: list[tuple[str, str]] = []
    for i, c in enumerate(pcls):
        reg = sc.new(c)
        g.emit(f"ld.param{PARAM_TYPE[c]} {reg}, [{name}_a{i}];")
        params.append((reg, c))
    for cls, n in FUNC_POOL.items():
        sc.pool[cls] = [sc.new(cls) for _ in range(n)]
        for reg in sc.pool[cls]:
            _init_from(g, reg, cls, params)
    sc.varying = g.all_pool() | {r for r, _ in params}  # callers may pass anything
    ret = f"[{name}_r]"
    ctx = Ctx(uniform=False, in_func=True, depth=1)
    g.budget = g.rng.randint(3, 10)
    if g.chance(0.3):
        g.emit(f"st.param{PARAM_TYPE[rcls]} {ret}, {g.src(rcls)};")
        g.statements(ctx, 2)
        g.emit(f"@{g.src('p')} ret;")
    g.statements(ctx, 8)
    g.emit(f"st.param{PARAM_TYPE[rcls]} {ret}, {g.src(rcls)};")
    g.emit("ret;")
    g.scope = outer
    g.funcs.append(FuncSig(name, pcls, rcls))
    plist = ", ".join(f".param {PARAM_TYPE[c]} {name}_a{i}" for i, c in enumerate(pcls))
    head = f".func (.param {PARAM_TYPE[rcls]} {name}_r) {name}({plist})"
    return [head, "{", *sc.declarations(), *sc.lines, "}"]


@feature("call", 2, compound=True)
def call(g: Gen, ctx: Ctx) -> None:
    if not g.funcs:  # while a function is generated, only earlier ones exist
        return
    f = g.rng.choice(g.funcs)
    args = [g.src(c) for c in f.params]
    g.emit("{")
    for i, c in enumerate(f.params):
        g.emit(f".param {PARAM_TYPE[c]} param{i};")
    g.emit(f".param {PARAM_TYPE[f.result]} retval0;")
    for i, (c, a) in enumerate(zip(f.params, args, strict=True)):
        g.emit(f"st.param{PARAM_TYPE[c]} [param{i}], {a};")
    uni = ".uni" if ctx.uniform and g.chance(0.5) else ""
    plist = ", ".join(f"param{i}" for i in range(len(f.params)))
    g.emit(f"call{uni} (retval0), {f.name}, ({plist});")
    write(g, ctx, f.result, f"ld.param{PARAM_TYPE[f.result]} {{d}}, [retval0];", tuple(args),
          guarded=False)  # fmt: skip
    g.emit("}")
