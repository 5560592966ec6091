"""The Ori-level view: a model of what ptxas does below PTX (spec 02).

ptxas lowers PTX into its own IR ("Ori"), whose instructions are SASS instruction
classes and whose virtual registers live in one of four files: R (per-thread 32-bit),
P (per-thread predicates), UR (warp-uniform 32-bit) and UP (warp-uniform predicates).
Nothing in this package changes the PTX ptxopt prints; it predicts and explains.

* :mod:`ptxopt.ori.capability` -- the per-SM table of SASS classes with a uniform form
  and of operand slots that accept a UR source, with the evidence for each row.
* :mod:`ptxopt.ori.view` -- PTX instruction -> SASS class, register webs.
* :mod:`ptxopt.ori.ur_alloc` -- phase 74 (ConvertToUniformReg): which webs go to UR/UP.
* :mod:`ptxopt.ori.conv_alloc` -- phase 86 (InsertPseudoUseDefForConvUR): CONV.ALLOC
  keep-alive markers and the allowConvAlloc diagnostics.
* :mod:`ptxopt.ori.report` -- ``ptxopt analyze --regfiles`` and ``--emit ori``.
"""
