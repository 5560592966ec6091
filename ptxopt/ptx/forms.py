"""Instruction forms: which modifiers, types and operands each PTX instruction takes.

The data are the syntax blocks of the PTX ISA 9.0 instruction pages, narrowed to
what ptxas 13.0 accepts (checked by assembling every combination with ptxas; see
``scripts/check_forms.py``).  ptxas reads the modifiers of an instruction as a set
(``ld.u32.global`` equals ``ld.global.u32``) except that type modifiers keep their
order (``cvt.f32.s32``: destination type first), so a form is matched the same way.

A form is written ``"MODIFIERS : TYPES : OPERANDS"``:

* MODIFIERS: slots separated by spaces.  ``.x`` must be present, ``[.x]`` may be;
  ``<g>`` is one modifier of group ``g`` (see ``GROUPS``); ``.a|.b`` alternatives.
* TYPES: one slot per type modifier, in order, each ``t1|t2|...`` (without dots) or
  ``<g>``.
* OPERANDS: one code per operand, ``?`` suffix for optional trailing ones:

  =======  ===============================================================
  ``d``    destination register of type slot 0 (``d1``: slot 1, ...)
  ``s``    source register or immediate of type slot 0 (``s1`` ...)
  ``r``    source register (no immediate) of type slot 0
  ``D``    destination with the relaxed rule (register may be wider; a vector
           ``{...}`` when the form has ``.v2``/``.v4``/``.v8``)
  ``S``    source with the relaxed rule (likewise)
  ``p``    predicate destination; ``P``: predicate source, ``!p`` allowed;
           ``pp``: ``p`` or ``p|q``; ``dq``: ``d`` or ``d|p``
  ``a``    address ``[...]``; ``l``: label; ``f``: function or symbol; ``*``: any
  ``:t``   source register or immediate of the fixed type ``t`` (``:u32``)
  ``R:t``  destination register of the fixed type ``t``
  =======  ===============================================================

An instruction missing from ``FORMS`` is checked only against the modifier
vocabulary (``known_modifiers()``) and for declared registers.
"""

from __future__ import annotations

GROUPS: dict[str, str] = {
    "rnd": ".rn .rz .rm .rp",
    "irnd": ".rni .rzi .rmi .rpi",
    "cmp": ".eq .ne .lt .le .gt .ge .lo .ls .hi .hs .equ .neu .ltu .leu .gtu .geu .num .nan",
    "fcmp": ".eq .ne .lt .le .gt .ge .equ .neu .ltu .leu .gtu .geu .num .nan",
    "icmp": ".eq .ne .lt .le .gt .ge .lo .ls .hi .hs",
    "bool": ".and .or .xor",
    "ss": ".const .global .local .param .param::entry .param::func .shared .shared::cta "
    ".shared::cluster",
    "sts": ".global .local .param .param::func .shared .shared::cta .shared::cluster",
    "cop": ".ca .cg .cs .lu .cv",
    "stcop": ".wb .cg .cs .wt",
    "l1": ".L1::evict_normal .L1::evict_unchanged .L1::evict_first .L1::evict_last "
    ".L1::no_allocate",
    "l2": ".L2::evict_normal .L2::evict_first .L2::evict_last",
    "pf": ".L2::64B .L2::128B .L2::256B",
    "scope": ".cta .cluster .gpu .sys",
    "vec": ".v2 .v4 .v8",
    "sem": ".relaxed .acquire .release .acq_rel",
    "atomop": ".and .or .xor .cas .exch .add .inc .dec .min .max",
    "shfl": ".up .down .bfly .idx",
    "vote": ".all .any .uni",
    "mulmode": ".hi .lo .wide",
    "reduxop": ".add .min .max .and .or .xor",
    "bar": ".sync .arrive .red",
    "membar": ".cta .gl .sys",
}

_INT = "u16|u32|u64|s16|s32|s64"
_INT32_64 = "u32|u64|s32|s64"
_BITS = "b16|b32|b64"
_ALL_LD = "b8|b16|b32|b64|b128|u8|u16|u32|u64|s8|s16|s32|s64|f32|f64"
_MOV = "pred|b16|b32|b64|b128|u16|u32|u64|s16|s32|s64|f32|f64"
_SETP = "b16|b32|b64|u16|u32|u64|s16|s32|s64|f32|f64"
_CVT = "u8|u16|u32|u64|s8|s16|s32|s64|f16|bf16|f32|f64|tf32"

FORMS: dict[str, list[str]] = {
    "add": [
        f" : {_INT}|u16x2|s16x2 : d s s",
        "[.sat] : s32 : d s s",
        f".cc : {_INT32_64} : d s s",
        "[<rnd>] [.ftz] [.sat] : f32 : d s s",
        "[<rnd>] [.ftz] : f32x2 : d s s",
        "[<rnd>] : f64 : d s s",
        "[.rn] [.ftz] [.sat] : f16|f16x2 : d s s",
        "[.rn] : bf16|bf16x2 : d s s",
    ],
    "sub": [
        f" : {_INT}|u16x2|s16x2 : d s s",
        "[.sat] : s32 : d s s",
        f".cc : {_INT32_64} : d s s",
        "[<rnd>] [.ftz] [.sat] : f32 : d s s",
        "[<rnd>] [.ftz] : f32x2 : d s s",
        "[<rnd>] : f64 : d s s",
        "[.rn] [.ftz] [.sat] : f16|f16x2 : d s s",
        "[.rn] : bf16|bf16x2 : d s s",
    ],
    "addc": [f"[.cc] : {_INT32_64} : d s s"],
    "subc": [f"[.cc] : {_INT32_64} : d s s"],
    "mul": [
        f".hi|.lo : {_INT} : d s s",
        ".wide : u16|s16 : R:b32 s s",
        ".wide : u32|s32 : R:b64 s s",
        "[<rnd>] [.ftz] [.sat] : f32 : d s s",
        "[<rnd>] [.ftz] : f32x2 : d s s",
        "[<rnd>] : f64 : d s s",
        "[.rn] [.ftz] [.sat] : f16|f16x2 : d s s",
        "[.rn] : bf16|bf16x2 : d s s",
    ],
    "mad": [
        f".hi|.lo : {_INT} : d s s s",
        ".wide : u16|s16 : R:b32 s s :b32",
        ".wide : u32|s32 : R:b64 s s :b64",
        ".hi .sat : s32 : d s s s",
        f".hi|.lo .cc : {_INT32_64} : d s s s",
        "<rnd> [.ftz] [.sat] : f32 : d s s s",
        "<rnd> : f64 : d s s s",
    ],
    "madc": [f".hi|.lo [.cc] : {_INT32_64} : d s s s"],
    "mul24": [".hi|.lo : u32|s32 : d s s"],
    "mad24": [".hi|.lo : u32|s32 : d s s s", ".hi .sat : s32 : d s s s"],
    "sad": [f" : {_INT} : d s s s"],
    "div": [
        f" : {_INT} : d s s",
        ".approx|.full [.ftz] : f32 : d s s",
        "<rnd> [.ftz] : f32 : d s s",
        "<rnd> : f64 : d s s",
    ],
    "rem": [f" : {_INT} : d s s"],
    "abs": [
        " : s16|s32|s64 : d s",
        "[.ftz] : f32 : d s",
        " : f64 : d s",
        "[.ftz] : f16|f16x2 : d s",
        " : bf16|bf16x2 : d s",
    ],
    "neg": [
        " : s16|s32|s64 : d s",
        "[.ftz] : f32 : d s",
        " : f64 : d s",
        "[.ftz] : f16|f16x2 : d s",
        " : bf16|bf16x2 : d s",
    ],
    "min": [
        f" : {_INT} : d s s",
        " : u16x2|s16x2 : d s s",
        "[.relu] : s16x2|s32 : d s s",
        "[.ftz] [.NaN] [.xorsign.abs] : f32 : d s s",
        "[.ftz] [.NaN] [.abs] : f32 : d s s s",
        " : f64 : d s s",
        "[.ftz] [.NaN] [.xorsign.abs] : f16|f16x2|bf16|bf16x2 : d s s",
    ],
    "max": [
        f" : {_INT} : d s s",
        " : u16x2|s16x2 : d s s",
        "[.relu] : s16x2|s32 : d s s",
        "[.ftz] [.NaN] [.xorsign.abs] : f32 : d s s",
        "[.ftz] [.NaN] [.abs] : f32 : d s s s",
        " : f64 : d s s",
        "[.ftz] [.NaN] [.xorsign.abs] : f16|f16x2|bf16|bf16x2 : d s s",
    ],
    "fma": [
        "<rnd> [.ftz] [.sat] : f32 : d s s s",
        "<rnd> [.ftz] : f32x2 : d s s s",
        "<rnd> : f64 : d s s s",
        ".rn [.ftz] [.sat|.relu] : f16|f16x2 : d s s s",
        ".rn [.relu] : bf16|bf16x2 : d s s s",
    ],
    "popc": [" : b32 : R:u32 s", " : b64 : R:u32 s"],
    "clz": [" : b32 : R:u32 s", " : b64 : R:u32 s"],
    "brev": [" : b32|b64 : d s"],
    "bfind": ["[.shiftamt] : u32|u64|s32|s64 : R:u32 s"],
    "bfe": [" : u32|s32|u64|s64 : d s :u32 :u32"],
    "bfi": [" : b32|b64 : d s s :u32 :u32"],
    "and": [" : pred|b16|b32|b64 : d P P"],
    "or": [" : pred|b16|b32|b64 : d P P"],
    "xor": [" : pred|b16|b32|b64 : d P P"],
    "not": [" : pred|b16|b32|b64 : d P"],
    "cnot": [" : b16|b32|b64 : d s"],
    "shl": [f" : {_BITS} : d s :u32"],
    "shr": [f" : {_BITS}|{_INT} : d s :u32"],
    "lop3": [" : b32 : d s s s :b32", "<bool> : b32 : dq s s s :b32 P"],
    "shf": [".l|.r .clamp|.wrap : b32 : d s s :u32"],
    "prmt": [" : b32 : d s s s", ".f4e|.b4e|.rc8|.ecl|.ecr|.rc16 : b32 : d s s s"],
    "setp": [
        f"<cmp> : {_SETP} : pp s s",
        f"<cmp> <bool> : {_SETP} : pp s s P",
        "<fcmp> [.ftz] : f32 : pp s s",
        "<fcmp> <bool> [.ftz] : f32 : pp s s P",
        "<fcmp> [.ftz] : f16|f16x2 : pp s s",
        "<fcmp> <bool> [.ftz] : f16|f16x2 : pp s s P",
        "<fcmp> : bf16|bf16x2 : pp s s",
        "<fcmp> <bool> : bf16|bf16x2 : pp s s P",
    ],
    "selp": [f" : {_INT}|{_BITS}|f32|f64 : d s s P"],
    "slct": [
        f" : {_INT}|{_BITS}|f32|f64 s32 : d s s s1",
        f"[.ftz] : {_INT}|{_BITS}|f32|f64 f32 : d s s s1",
    ],
    "mov": [f" : {_MOV} : d s"],
    "ld": [
        "[.weak] [<ss>] [<cop>] [.L2::cache_hint] [<pf>] [<vec>] [.nc] [.unified] : "
        f"{_ALL_LD} : D a :b64?",
        "[.weak] [<ss>] [<l1>] [<l2>] [.L2::cache_hint] [<pf>] [<vec>] [.nc] [.unified] : "
        f"{_ALL_LD} : D a :b64?",
        f".volatile [<ss>] [<pf>] [<vec>] : {_ALL_LD} : D a",
        ".relaxed|.acquire <scope> [<ss>] [<l1>] [<l2>] [.L2::cache_hint] [<pf>] [<vec>] : "
        f"{_ALL_LD} : D a :b64?",
        f".mmio .relaxed .sys [.global] : {_ALL_LD} : D a",
    ],
    "ldu": [f"[.global] [<vec>] : {_ALL_LD} : D a"],
    "st": [
        f"[.weak] [<sts>] [<stcop>] [.L2::cache_hint] [<vec>] : {_ALL_LD} : a S :b64?",
        f"[.weak] [<sts>] [<l1>] [<l2>] [.L2::cache_hint] [<vec>] : {_ALL_LD} : a S :b64?",
        f".volatile [<sts>] [<vec>] : {_ALL_LD} : a S",
        ".relaxed|.release <scope> [<sts>] [<l1>] [<l2>] [.L2::cache_hint] [<vec>] : "
        f"{_ALL_LD} : a S :b64?",
        f".mmio .relaxed .sys [.global] : {_ALL_LD} : a S",
    ],
    "cvta": [
        ".const|.global|.local|.shared|.shared::cta|.shared::cluster|.param|.param::entry "
        ": u32|u64 : d *",
        ".to .const|.global|.local|.shared|.shared::cta|.shared::cluster|.param|.param::entry "
        ": u32|u64 : d s",
    ],
    "bra": ["[.uni] : : l"],
    "ret": ["[.uni] : :"],
    "exit": [" : :"],
    "trap": [" : :"],
    "brkpt": [" : :"],
    "membar": ["<membar> : :", ".proxy .alias : :"],
    "activemask": [" : b32 : d"],
    "bar.warp.sync": [" : : :u32"],
    "shfl": [".sync <shfl> : b32 : dq s :u32 :u32 :u32", "<shfl> : b32 : dq s :u32 :u32"],
    "vote": [
        "[.sync] .all|.any|.uni : pred : p P :u32?",
        "[.sync] .ballot : b32 : d P :u32?",
    ],
    "redux": [
        ".sync .add|.min|.max : u32|s32 : d r :u32",
        ".sync .and|.or|.xor : b32 : d r :u32",
    ],
    "match": [".any|.all .sync : b32|b64 : * s :u32", ".any|.all .sync : b32|b64 : * s :u32 P?"],
    "testp": [
        ".finite|.infinite|.number|.notanumber|.normal|.subnormal : f32|f64 : R:pred s",
    ],
    "copysign": [" : f32|f64 : d s s"],
    "rcp": [
        ".approx [.ftz] : f32 : d s",
        "<rnd> [.ftz] : f32 : d s",
        "<rnd> : f64 : d s",
        ".approx .ftz : f64 : d s",
    ],
    "sqrt": [".approx [.ftz] : f32 : d s", "<rnd> [.ftz] : f32 : d s", "<rnd> : f64 : d s"],
    "rsqrt": [".approx [.ftz] : f32|f64 : d s"],
    "sin": [".approx [.ftz] : f32 : d s"],
    "cos": [".approx [.ftz] : f32 : d s"],
    "lg2": [".approx [.ftz] : f32 : d s"],
    "ex2": [
        ".approx [.ftz] : f32 : d s",
        ".approx [.ftz] : f16|f16x2 : d s",
        ".approx .ftz : bf16|bf16x2 : d s",
    ],
    "tanh": [".approx : f32|f16|f16x2|bf16|bf16x2 : d s"],
    # measured with ptxas 13.0: the 16-bit and packed destinations take only the
    # source types listed here (set.u16.s16 and set.f32.f16 are refused)
    "set": [
        f"<cmp> [.ftz] : u32|s32|f32 {_SETP} : d s1 s1",
        f"<cmp> <bool> [.ftz] : u32|s32|f32 {_SETP} : d s1 s1 P",
        "<cmp> [.ftz] : u32|s32 f16|f16x2|bf16|bf16x2 : d s1 s1",
        "<cmp> <bool> [.ftz] : u32|s32 f16|f16x2|bf16|bf16x2 : d s1 s1 P",
        "<cmp> [.ftz] : u16|s16 f16|bf16 : d s1 s1",
        "<cmp> <bool> [.ftz] : u16|s16 f16|bf16 : d s1 s1 P",
        f"<cmp> [.ftz] : f16|bf16 f16|{_SETP} : d s1 s1",
        f"<cmp> <bool> [.ftz] : f16|bf16 f16|{_SETP} : d s1 s1 P",
        "<cmp> [.ftz] : bf16 bf16 : d s1 s1",
        "<cmp> <bool> [.ftz] : bf16 bf16 : d s1 s1 P",
        "<cmp> [.ftz] : f16x2 f16x2 : d s1 s1",
        "<cmp> <bool> [.ftz] : f16x2 f16x2 : d s1 s1 P",
        "<cmp> [.ftz] : bf16x2 bf16x2 : d s1 s1",
        "<cmp> <bool> [.ftz] : bf16x2 bf16x2 : d s1 s1 P",
    ],
    "atom": [
        "[<sem>] [<scope>] [.global|.shared|.shared::cta|.shared::cluster] "
        ".and|.or|.xor|.exch|.add|.inc|.dec|.min|.max [.L2::cache_hint] "
        ": b32|b64|u32|u64|s32|s64|f32|f64 : d a s :b64?",
        "[<sem>] [<scope>] [.global|.shared|.shared::cta|.shared::cluster] .cas "
        ": b16|b32|b64|b128|u32|u64|s32|s64 : d a s s",
        "[<sem>] [<scope>] [.global|.shared|.shared::cta|.shared::cluster] .exch "
        "[.L2::cache_hint] : b128 : d a s :b64?",
        "[<sem>] [<scope>] [.global|.shared|.shared::cta|.shared::cluster] .add|.min|.max .noftz "
        "[.L2::cache_hint] : f16|f16x2|bf16|bf16x2 : d a s :b64?",
        "[<sem>] [<scope>] [.global] .add|.min|.max [.noftz] [.L2::cache_hint] <vec> "
        ": f32|f16|bf16|f16x2|bf16x2 : D a S :b64?",
    ],
    "st.async": [
        "[.weak] [.shared::cluster] .mbarrier::complete_tx::bytes [.v2|.v4] "
        ": b16|b32|b64|u32|u64|s32|s64|f32|f64 : a S a",
        f"[.mmio] .release .gpu|.sys|.cluster [.global] [<vec>] : {_ALL_LD} : a S",
    ],
    "st.bulk": ["[.weak] [.shared::cta] : : a :b64 :b64"],
    "red.async": [
        "[.relaxed] [.cluster] [.shared::cluster] .mbarrier::complete_tx::bytes "
        ".inc|.dec|.min|.max|.add|.and|.or|.xor : b32|b64|u32|u64|s32|s64 : a s a",
        "[.mmio] .release .gpu|.sys|.cluster [.global] .add|.min|.max|.inc|.dec|.and|.or|.xor "
        "[.L2::cache_hint] : b32|b64|u32|u64|s32|s64 : a s :b64?",
    ],
    "red": [
        "[<sem>] [<scope>] [.global|.shared|.shared::cta|.shared::cluster] <atomop> "
        "[.L2::cache_hint] : b32|b64|u32|u64|s32|s64|f32|f64 : a s :b64?",
        "[<sem>] [<scope>] [.global|.shared|.shared::cta|.shared::cluster] .add|.min|.max .noftz "
        "[.L2::cache_hint] : f16|f16x2|bf16|bf16x2 : a s :b64?",
    ],
    "bar.sync": ["[.aligned] : : :u32 :u32?"],
    "barrier.sync": ["[.aligned] : : :u32 :u32?"],
    "bar.arrive": ["[.aligned] : : :u32 :u32"],
    "barrier.arrive": ["[.aligned] : : :u32 :u32"],
    "cvt": [
        f"[<irnd>|<rnd>|.rna] [.ftz] [.sat] [.relu] [.satfinite] : {_CVT} {_CVT} : D S1",
        ".rn|.rz|.rs [.relu] [.satfinite] : f16x2|bf16x2 f32 : D S1 S1 :b32?",
        ".rn|.rz|.rs [.relu] .satfinite : e4m3x2|e5m2x2|e2m1x2|e2m3x2|e3m2x2 f32 : R:b16 s1 s1",
        ".rn [.relu] [.satfinite] : e4m3x2|e5m2x2 f16x2 : R:b16 s1",
        ".rn [.relu] : f16x2 e4m3x2|e5m2x2|e2m1x2|e2m3x2|e3m2x2 : d R:b16",
    ],
}

#: Modifiers an instruction may carry beside those in its forms; ptxas knows every
#: modifier of the instruction pages, so anything else is an unknown modifier.
EXTRA_MODIFIERS = (
    ".sync .aligned .async .m8n8 .m16n8 .m16n16 .x1 .x2 .x4 .trans .row .col .m16n8k16 "
    ".m16n8k8 .m16n8k32 .m16n8k4 .m8n8k4 .m8n8k16 .m16n8k64 .m16n8k128 .m16n8k256 "
    ".satfinite .relu .pack .noftz .to .uni .wide .lo .hi .cc .full .approx .ftz .sat "
    ".shiftamt .clamp .wrap .l .r .popc .red .arrive .sync .warp .cta .cluster .gpu .sys "
    ".gl .mbarrier::complete_tx::bytes .mbarrier .complete_tx::bytes .bulk_group "
    ".commit_group .wait_group .wait_group.read .read .mma_async .sp .fence .proxy .async "
    ".alias .shared::cluster .multicast::cluster .tile .im2col .1d .2d .3d .4d .5d .L2 "
    ".expect_tx .arrive_drop .test_wait .try_wait .parity .init .inval .noinc .complete_tx "
    ".pending_count .ldmatrix .stmatrix .tensormap .generic .release .acquire .acq_rel "
    ".relaxed .weak .volatile .mmio .sc .unified .nc .elect .any .all .ballot .idx .up "
    ".down .bfly .b4e .f4e .rc8 .ecl .ecr .rc16 .NaN .xorsign .abs .finite .infinite "
    ".number .notanumber .normal .subnormal .rni .rzi .rmi .rpi .rna .rs .rn .rz .rm .rp "
    ".e4m3 .e5m2 .s8 .u8 .s4 .u4 .b1 .xor .and .or .popc .add .min .max .inc .dec .cas "
    ".exch .ca .cg .cs .lu .cv .wb .wt .v2 .v4 .v8 .v16 .global .shared .local .const "
    ".param .tex .shared::cta .param::entry .param::func .cp .bulk .tensor .prefetch "
    ".reduce .commit .wait_all .wait .ld .st .alloc .dealloc .relinquish_alloc_permit "
    ".shift .mma .kind::f16 .kind::tf32 .kind::f8f6f4 .kind::i8 .cta_group::1 "
    ".cta_group::2 .ws .collector::a::fill .collector::a::use .collector::a::lastuse "
    ".collector::a::discard .release.gpu .acquire.gpu .m64n8k16 .m64n16k16 .m64n32k16 "
    ".m64n64k16 .m64n128k16 .m64n256k16 .m64n8k8 .m64n16k8 .m64n32k8 .m64n64k8 "
    ".m64n128k8 .m64n256k8 .m64n8k32 .m64n64k32 .m64n128k32 .m64n256k32 .aligned "
    ".trans .num .nan .equ .neu .ltu .leu .gtu .geu .eq .ne .lt .le .gt .ge .lo .ls .hs "
    ".L2::cache_hint .L2::64B .L2::128B .L2::256B .L1::evict_normal .L1::evict_unchanged "
    ".L1::evict_first .L1::evict_last .L1::no_allocate .L2::evict_normal .L2::evict_first "
    ".L2::evict_last .L2::evict_unchanged .fractional .evict_last .evict_normal "
    ".evict_first .evict_unchanged .level::eviction_priority .b32 .u32 .shared::cta"
)


#: Every modifier spelled in the syntax blocks of the PTX ISA 9.0 instruction pages
#: (placeholders such as ``.type`` left out): ptxas reports anything else as an
#: unknown modifier.
ISA_MODIFIERS = """
.L1 .L1::evict_first .L1::evict_last .L1::evict_normal .L1::evict_unchanged
.L1::no_allocate .L2 .L2::128B .L2::256B .L2::64B .L2::cache_hint .L2::evict_first
.L2::evict_last .L2::evict_normal .L2::evict_unchanged .NaN .a .a1d .a2d .a2dms .abs
.acc::f16 .acc::f32 .acq_rel .acquire .acube .add .addr_mode_0 .alias .aligned .all
.alloc .and .any .approx .array_size .arrive .arrive_drop .ashift .async .async::generic
.b .b0 .b00 .b01 .b02 .b03 .b04 .b05 .b06 .b07 .b1 .b10 .b1024 .b11 .b12 .b128 .b13 .b14
.b15 .b16 .b17 .b2 .b20 .b21 .b210 .b22 .b23 .b24 .b25 .b26 .b27 .b3 .b30 .b31 .b310
.b32 .b320 .b321 .b3210 .b33 .b34 .b35 .b36 .b37 .b40 .b41 .b42 .b43 .b44 .b45 .b46 .b47
.b4e .b4x16_p64 .b50 .b51 .b52 .b53 .b54 .b55 .b56 .b57 .b60 .b61 .b62 .b63 .b64 .b65
.b66 .b67 .b6x16_p32 .b70 .b71 .b72 .b73 .b74 .b75 .b76 .b77 .b8 .b8x16 .ballot .base
.bf16 .bf16x2 .bfly .block16 .block32 .block_scale .box_dim .bulk .bulk_group .c .ca
.cas .cc .cg .channel_data_type .channel_order .clamp .cluster .col
.collector::buffer::op .commit .commit_group .complete_tx .const .cp .cp_fenceproxy
.cp_mask .cs .cta .cta_group::1 .cta_group::2 .cube .cv .cvt .d .dealloc .dec .depth
.down .e2m1 .e2m1x2 .e2m1x4 .e2m3 .e2m3x2 .e2m3x4 .e3m2 .e3m2x2 .e3m2x4 .e4m3 .e4m3x2
.e4m3x4 .e5m2 .e5m2x2 .e5m2x4 .ecl .ecr .element_stride .elemtype .eq .equ .exch
.expect_tx .f16 .f16x2 .f32 .f32x2 .f4e .f64 .fence .fence::after_thread_sync
.fence::before_thread_sync .fill_mode .filter_mode .finite .force_unnormalized_coords
.fractional .ftz .full .g .ge .get_first_ctaid .get_first_ctaid::x .get_first_ctaid::y
.get_first_ctaid::z .geu .gl .global .global_address .global_dim .global_stride .gpu
.grad .gt .gtu .h0 .h00 .h01 .h02 .h03 .h1 .h10 .h11 .h12 .h13 .h20 .h21 .h22 .h23 .h30
.h31 .h32 .h33 .height .hi .hs .idx .im2col .im2col::w .im2col::w::128 .im2col_no_offs
.inc .infinite .init .interleave_layout .inval .is_canceled .kind::f16 .kind::f8f6f4
.kind::i8 .kind::mxf4 .kind::mxf4nvf4 .kind::mxf8f6f4 .kind::tf32 .l .launch_dependents
.ld .ld_reduce .le .leu .lo .load .local .ls .lt .ltu .lu .m16n16 .m16n16k16 .m16n16k8
.m16n8 .m16n8k128 .m16n8k16 .m16n8k256 .m16n8k32 .m16n8k4 .m16n8k64 .m16n8k8 .m32n8k16
.m64n104k16 .m64n104k32 .m64n104k64 .m64n104k8 .m64n112k16 .m64n112k256 .m64n112k32
.m64n112k64 .m64n112k8 .m64n120k16 .m64n120k32 .m64n120k64 .m64n120k8 .m64n128k16
.m64n128k256 .m64n128k32 .m64n128k64 .m64n128k8 .m64n136k16 .m64n136k32 .m64n136k64
.m64n136k8 .m64n144k16 .m64n144k256 .m64n144k32 .m64n144k64 .m64n144k8 .m64n152k16
.m64n152k32 .m64n152k64 .m64n152k8 .m64n160k16 .m64n160k256 .m64n160k32 .m64n160k64
.m64n160k8 .m64n168k16 .m64n168k32 .m64n168k64 .m64n168k8 .m64n16k16 .m64n16k256
.m64n16k32 .m64n16k64 .m64n16k8 .m64n176k16 .m64n176k256 .m64n176k32 .m64n176k64
.m64n176k8 .m64n184k16 .m64n184k32 .m64n184k64 .m64n184k8 .m64n192k16 .m64n192k256
.m64n192k32 .m64n192k64 .m64n192k8 .m64n200k16 .m64n200k32 .m64n200k64 .m64n200k8
.m64n208k16 .m64n208k256 .m64n208k32 .m64n208k64 .m64n208k8 .m64n216k16 .m64n216k32
.m64n216k64 .m64n216k8 .m64n224k16 .m64n224k256 .m64n224k32 .m64n224k64 .m64n224k8
.m64n232k16 .m64n232k32 .m64n232k64 .m64n232k8 .m64n240k16 .m64n240k256 .m64n240k32
.m64n240k64 .m64n240k8 .m64n248k16 .m64n248k32 .m64n248k64 .m64n248k8 .m64n24k16
.m64n24k256 .m64n24k32 .m64n24k64 .m64n24k8 .m64n256k16 .m64n256k256 .m64n256k32
.m64n256k64 .m64n256k8 .m64n32k16 .m64n32k256 .m64n32k32 .m64n32k64 .m64n32k8 .m64n40k16
.m64n40k32 .m64n40k64 .m64n40k8 .m64n48k16 .m64n48k256 .m64n48k32 .m64n48k64 .m64n48k8
.m64n56k16 .m64n56k32 .m64n56k64 .m64n56k8 .m64n64k16 .m64n64k256 .m64n64k32 .m64n64k64
.m64n64k8 .m64n72k16 .m64n72k32 .m64n72k64 .m64n72k8 .m64n80k16 .m64n80k256 .m64n80k32
.m64n80k64 .m64n80k8 .m64n88k16 .m64n88k32 .m64n88k64 .m64n88k8 .m64n8k16 .m64n8k256
.m64n8k32 .m64n8k64 .m64n8k8 .m64n96k16 .m64n96k256 .m64n96k32 .m64n96k64 .m64n96k8
.m8n16 .m8n32k16 .m8n8 .m8n84 .m8n8k128 .m8n8k16 .m8n8k32 .m8n8k4 .max .mbarrier
.mbarrier::arrive::one .mbarrier::complete_tx::bytes .mbarrier_init .memory_layout .min
.mma .mma_async .mmio .multicast::cluster .multicast::cluster::all .nan .nc .ne .neu
.noComplete .noftz .noinc .normal .normalized_coords .notanumber .num_mipmap_levels
.num_samples .number .oob .or .p .pack::16b .param .param::entry .param::func .parity
.pending_count .po .popc .pred .prefetch .proxy .query_cancel .r .range .rank .rc16 .rc8
.read .red .reduce .relaxed .release .relinquish_alloc_permit .relu .replace .rm .rmi
.rn .rna .rni .row .rp .rpi .rs .rz .rzi .s16 .s16x2 .s2 .s32 .s4 .s64 .s8 .samplerref
.sat .satfinite .sc .scale_vec::1X .scale_vec::2X .scale_vec::4X .shared
.shared::cluster .shared::cta .shift .shiftamt .shr15 .shr7 .sp .sp::ordered_metadata
.st .store .subnormal .surfref .swizzle_atomicity .swizzle_mode .sync
.sync_restrict::shared::cluster .sync_restrict::shared::cta .sys .tensor .tensormap
.tensormap::generic .test_wait .texref .tf32 .tile .tile::gather4 .tile::scatter4 .to
.trans .trap .try_cancel .try_wait .u16 .u16x2 .u2 .u32 .u4 .u64 .u8 .ue4m3 .ue8m0
.ue8m0x2 .uni .unified .unpack::16b .up .v2 .v4 .v8 .volatile .wait .wait::ld .wait::st
.wait_all .wait_group .warp .warpx2::01_23 .16x64b .16x128b .16x256b .32x32b .16x32bx2
.128x256b .4x256b .128x128b .64x128b .32x128b .warpx2::02_13 .warpx4 .wb .weak .wide .width
.wrap .ws .wt .x1 .x128 .x16 .x2 .x32 .x4 .x64 .x8 .xor .xorsign .zero
"""


# Modifiers ptxas 13.0 accepts on any instruction and ignores: the tensormap.replace
# field names, testp's classes, the wgmma accumulator types and the ldmatrix element
# shapes.  Measured: a kernel's SASS is unchanged with .rank, .finite, .acc::f16 or
# .b8x16 inserted at every modifier position of ld, st, add, mul, setp, bra, cvt and
# sqrt, and with each of the 22 in add.s32 and mul.lo.s32.  The parser drops them
# where no form of the opcode names them.  Only between mul/mad/mul24/mad24 and their
# .lo/.hi/.wide does ptxas refuse one ("Unexpected instruction types").
IGNORED_MODIFIERS = frozenset(
    {
        ".box_dim", ".element_stride", ".elemtype", ".fill_mode", ".global_address",
        ".global_dim", ".global_stride", ".interleave_layout", ".rank",
        ".swizzle_atomicity", ".swizzle_mode",
        ".finite", ".infinite", ".normal", ".notanumber", ".number", ".subnormal",
        ".acc::f16", ".acc::f32", ".b4x16_p64", ".b6x16_p32", ".b8x16",
    }
)  # fmt: skip
