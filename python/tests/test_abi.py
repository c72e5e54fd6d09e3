"""The ctypes mirror of hot.h (python/hot/_lib.py) against the C header: every field's offset and
size, every struct's size and every enum value, as printed by hot_py_helper (compiled against
hot.h in the same build). A change of the header that _lib.py does not follow fails here."""

import ctypes

from conftest import run_helper


def c_layout(helper):
    fields, sizes, consts = {}, {}, {}
    for line in run_helper(helper, "abi").splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "sizeof":
            sizes[parts[0]] = int(parts[2])
        elif len(parts) == 3:
            fields[parts[0]] = (int(parts[1]), int(parts[2]))
        elif len(parts) == 2:
            consts[parts[0]] = int(parts[1])
        else:
            raise AssertionError(f"unexpected line from hot_py_helper abi: {line!r}")
    return fields, sizes, consts


def py_fields(cls, prefix, base=0, out=None):
    """{"type.field[.sub]": (offset, size)} of a ctypes struct, anonymous nested structs of
    hot_layer_spec expanded by field path (as the C side prints them)."""
    from hot import _lib
    out = {} if out is None else out
    for name, typ in cls._fields_:
        d = getattr(cls, name)
        key = f"{prefix}.{name}"
        out[key] = (base + d.offset, d.size)
        if typ in _lib.ANONYMOUS:
            py_fields(typ, key, base + d.offset, out)
    return out


def test_struct_layout_matches_header(hot, helper):
    fields, sizes, _ = c_layout(helper)
    from hot import _lib
    mine = {}
    for cls in _lib.MIRRORED:
        assert ctypes.sizeof(cls) == sizes[cls.__name__], \
            f"sizeof({cls.__name__}): ctypes {ctypes.sizeof(cls)}, C {sizes[cls.__name__]}"
        py_fields(cls, cls.__name__, 0, mine)
    c_mirrored = dict(fields)
    assert set(mine) == set(c_mirrored), \
        f"fields only in Python: {sorted(set(mine) - set(c_mirrored))}; " \
        f"only in C: {sorted(set(c_mirrored) - set(mine))}"
    bad = {k: (mine[k], c_mirrored[k]) for k in mine if mine[k] != c_mirrored[k]}
    assert not bad, f"(offset, size) differ, Python vs C: {bad}"


def test_enum_values_match_header(hot, helper):
    _, _, consts = c_layout(helper)
    from hot import _lib
    assert set(consts) == set(_lib.C_CONSTANTS), \
        f"only in C: {sorted(set(consts) - set(_lib.C_CONSTANTS))}; " \
        f"only in Python: {sorted(set(_lib.C_CONSTANTS) - set(consts))}"
    bad = {k: (_lib.C_CONSTANTS[k], consts[k]) for k in consts if consts[k] != _lib.C_CONSTANTS[k]}
    assert not bad, f"values differ, Python vs C: {bad}"


def test_status_names_from_library(hot):
    for s in hot.Status:
        if s is hot.Status.COUNT:
            assert hot.status_name(s) == "HOT_ERR_?"
        else:
            assert hot.status_name(s) == "HOT_" + s.name


def test_every_public_function_is_declared(hot):
    """Every HOT_API function of hot.h has a ctypes declaration in _lib (_FUNCS, or the recipe
    defaults looked up apart) with as many parameters as the header gives it, so a function added
    to the C API cannot be missing from the Python mirror or called with a stale argument list."""
    import os
    import re
    from conftest import SOURCE_DIR
    from hot import _lib
    header = open(os.path.join(SOURCE_DIR, "runtime", "include", "hot.h")).read()
    decls = re.findall(r"^HOT_API\s[^;(]*?\b(hot_[a-z0-9_]+)\s*\(([^)]*)\)\s*;", header,
                       re.M | re.S)
    assert len(decls) >= 20, f"only {len(decls)} declarations found: the scan is broken"
    problems = []
    for name, params in decls:
        n = 0 if params.strip() == "void" else params.count(",") + 1
        if name in _lib._DEFAULTS_NAMES:
            continue
        if name not in _lib._FUNCS:
            problems.append(f"{name}: not in _lib._FUNCS")
        elif len(_lib._FUNCS[name][1]) != n:
            problems.append(f"{name}: {n} parameters in hot.h, {len(_lib._FUNCS[name][1])} "
                            "in _lib._FUNCS")
    assert not problems, "; ".join(problems)


def test_records_carry_every_field_of_their_struct(hot):
    """Layer.info() and Context.stats() give every field of hot_layer_info and hot_stats (the
    records are the structs' Python face: a field hot.h adds must reach them too)."""
    import dataclasses
    from hot import _lib
    for rec, struct in ((hot.LayerInfo, _lib.hot_layer_info), (hot.Stats, _lib.hot_stats)):
        mine = [f.name for f in dataclasses.fields(rec)]
        assert mine == [n for n, _ in struct._fields_], (rec.__name__, struct.__name__)
    with hot.Context("cpu") as ctx:
        assert ctx.create_layer(16, 8).info().tiles.startswith(("default", "tuned", "spec"))
