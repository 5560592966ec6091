"""``ptxopt.specialize``: a kernel specialized for given parameter values (the library
side of ``ptxopt opt --param``; pass ``replace-uniforms-with-imm``)."""

from __future__ import annotations


def specialize(
    ptx: str,
    kernel: str,
    values: dict[str | int, int | float | str],
    passes: list[str] | None = None,
) -> str:
    """PTX text of ``ptx`` with kernel ``kernel`` specialized for the parameter values
    ``values`` (keys: the PTX parameter name or its position; values: numbers or
    PTX literals).  Loads of those parameters become immediates (pass
    ``replace-uniforms-with-imm``, then ``passes`` if given); the signature is kept,
    so the result is correct whenever the kernel is launched with these values."""
    from ptxopt.driver import optimize
    from ptxopt.ptx.parser import parse

    fn = parse(ptx).function(kernel)
    if not fn.is_entry:
        raise ValueError(f"'{kernel}' is not a kernel (.entry)")
    items = []
    for key, value in values.items():
        if isinstance(key, int):
            if not 0 <= key < len(fn.params):
                raise ValueError(f"kernel {kernel} has no parameter #{key}")
            name = fn.params[key].name
        else:
            name = key
            if all(p.name != name for p in fn.params):
                raise ValueError(f"kernel {kernel} has no parameter '{name}'")
        text = repr(value) if isinstance(value, float) else str(value)
        items.append(f"{kernel}:{name}={text}")
    knobs: dict[str, object] = {"SpecializeParams": ";".join(items)}
    return optimize(
        ptx,
        "<specialize>",
        ["replace-uniforms-with-imm", *(passes or [])],
        knobs=knobs,
        reports=False,
        release=True,
    ).text
