"""convert()'s memory side: which activations become HOT ones, installing the new modules,
what each converted module keeps (the report), and — with convert(example=...) — the measured
saved bytes per module before and after (distinct storages, hot.memory), putting back what would
keep more."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import memory

_LAYERS = (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)


def _joined(parent, child):
    return f"{parent}.{child}" if parent else child


def _hot_activation(act, owner):
    """The HOT twin of a ReLU or GELU (function or plain module) called by module `owner`, else
    None; the twin of a module keeps its hooks (the same tables: a handle made on the original
    still removes its hook), as a converted linear map does, and its training flag (the
    owner's for a function)."""
    if act is F.relu or act is torch.relu or type(act) is nn.ReLU:
        new = memory.HOTReLU()
    elif act is F.gelu:
        new = memory.HOTGELU()
    elif type(act) is nn.GELU:
        new = memory.HOTGELU(act.approximate)
    else:
        return None
    if isinstance(act, nn.Module):
        from .torch import _share_hooks
        _share_hooks(new, act)
    new.train((act if isinstance(act, nn.Module) else owner).training)
    return new


def _plain_activation(new):
    """The torch module computing what `new` (a HOT activation) computes, for measuring."""
    if isinstance(new, memory.HOTReLU):
        return nn.ReLU()
    return nn.GELU(new.approximate)


def activation_swaps(model, replace):
    """{qualified name: HOT activation} for every ReLU/GELU whose output a converted linear
    map reads: a transformer layer's activation when its linear2 is converted, and an
    nn.ReLU/nn.GELU followed by a converted linear map in an nn.Sequential (one that keeps
    nn.Sequential's forward: a forward of its own may do anything between the two)."""
    swaps = {}
    for n, m in model.named_modules():
        if isinstance(m, _LAYERS) and _joined(n, "linear2") in replace:
            new = _hot_activation(getattr(m, "activation", None), m)
            if new is not None:
                swaps[_joined(n, "activation")] = (new, _joined(n, "linear2"))
        elif isinstance(m, nn.Sequential) and type(m).forward is nn.Sequential.forward:
            kids = list(m.named_children())
            for (a, ma), (b, _mb) in zip(kids, kids[1:]):
                if _joined(n, b) in replace:
                    new = _hot_activation(ma, m)
                    if new is not None:
                        swaps[_joined(n, a)] = (new, _joined(n, b))
    return swaps


def install(model, mapping):
    """setattr of every {qualified name: module or (module, ...)} into model; a function (a
    transformer layer's F.relu / F.gelu put back) replaces the module standing in its place."""
    for n, new in mapping.items():
        new = new[0] if isinstance(new, tuple) else new
        parent_name, _, child = n.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        if not isinstance(new, nn.Module) and child in parent._modules:
            delattr(parent, child)  # nn.Module refuses a function where a child module is
        setattr(parent, child, new)


def _get(model, name):
    parent_name, _, child = name.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    return getattr(parent, child)


_KEEPS_LINEAR = ("int8 codes of x^ (HLA basis {basis}), or a reference to x where a neighbour "
                 "keeps x anyway or the codes would not be smaller")


def describe(report, replace, acts):
    """What each converted module keeps, for the report."""
    from . import torch as ht
    for n, m in replace.items():
        basis = {"auto": "measured: the cut if its g_w error <= "
                         f"{memory.BASIS_MAX_ERROR}, else full; a kept cut measured again as it trains",
                 "spec": "as the spec says"}[m.hot_hla_basis if isinstance(m, ht.HOTLinear)
                                             else m._hot_opts.get("hla_basis", "spec")]
        what = _KEEPS_LINEAR.format(basis=basis)
        if isinstance(m, ht.HOTMultiheadAttention):
            what = "projections: " + what + "; out_proj: a reference to SDPA's output"
        if isinstance(m, ht.HOTLinear) and not m.weight.requires_grad:
            what = ("nothing while its weight is frozen (no g_w: hot computes g_x alone); once "
                    "it trains, " + what)
        report.keeps.append((n or "(model)", what))
    for n, (new, reader) in acts.items():
        if isinstance(new, memory.HOTReLU):
            what = f"a 1-bit mask, not its output ({reader}'s codes are the only copy)"
            report._add(True, n, "ReLU -> HOTReLU", f"before {reader}")
        else:
            what = f"its input, as GELU does; {reader} rebuilds its own input from it (no codes)"
            report._add(True, n, "GELU -> HOTGELU", f"before {reader}")
        report.keeps.append((n, what))


def _measure(model, example, names):
    """The example's saved bytes; the model's buffers (batch norm statistics, ...) and torch's
    random streams (dropout) are as they were before it ran."""
    kept = [(m, k, b.detach().clone()) for m in model.modules()
            for k, b in m._buffers.items() if b is not None]
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []
    try:
        with torch.random.fork_rng(devices=devices), torch.enable_grad():
            _out, total, per = memory.saved_by_module(model, lambda: example(model), names)
    finally:
        with torch.no_grad():
            for m, k, b in kept:
                cur = m._buffers.get(k)
                if cur is not None and cur.shape == b.shape and cur.dtype == b.dtype:
                    cur.copy_(b)
                else:
                    m._buffers[k] = b
    return total, per


def measure(model, example, replace):
    """Saved bytes of the model as it is (before convert installs anything), per replaced
    module, with the activations to be swapped measured as modules of their own."""
    return _measure(model, example, list(replace))


def check(model, example, replace, acts, originals, before, report):
    """Measures the converted model (modules still choosing their HLA basis counted with the
    full basis, the larger), puts back swapped activations and converted modules whose group
    keeps more than before, and writes the figures into the report. Returns the names of the
    converted modules that keep more ("": the model itself, converted as a whole: the caller
    returns the original)."""
    names = list(replace) + list(acts)
    from . import torch as ht
    with memory.assume_full_basis():
        try:
            total_after, after = _measure(model, example, names)
        finally:  # the layers made for the measurement go
            for m in model.modules():
                if isinstance(m, (ht.HOTLinear, ht.HOTMultiheadAttention)):
                    for p in [m] if isinstance(m, ht.HOTLinear) else m._hot_in.values():
                        with p._hot_lock:
                            p._hot_layers.clear()
    total_before, before_per = before
    readers = {}
    for n, (new, reader) in acts.items():
        b = before_per.get(reader, 0) + _act_before(model, example, n, new)
        a = after.get(reader, 0) + after.get(n, 0)
        readers[reader] = n
        report.measured.append((f"{n} + {reader}", b, a))
        if a > b:
            install(model, {n: originals[n]})
            _unreport(report, n)
            report.skipped.append((n, "activation put back", f"keeps {a} bytes with it against "
                                   f"{b} without"))
    put_back = []
    for n in replace:
        if n in readers:
            continue
        b, a = before_per.get(n, 0), after.get(n, 0)
        report.measured.append((n or "(model)", b, a))
        if a > b:
            if n:
                install(model, {n: originals[n]})
            _unreport(report, n)
            put_back.append(n)
            report.skipped.append((n or "(model)", "put back",
                                   f"keeps {a} bytes converted against {b}"))
    report.measured_total = (total_before, total_after)
    return put_back


def _unreport(report, name):
    """A module put back is no longer converted and keeps what it kept before: its lines (and
    those of modules converted with it, under its name; every line for the model itself, "")
    leave the report's converted and keeps lists."""
    def ours(n):
        return not name or n == name or n.startswith(name + ".")
    report.converted = [r for r in report.converted if not ours(r[0])]
    report.keeps = [r for r in report.keeps if not ours(r[0])]


def _act_before(model, example, name, new):
    """Bytes the original activation keeps (measured as a plain module in its place)."""
    install(model, {name: _plain_activation(new)})
    try:
        _t, per = _measure(model, example, [name])
    finally:
        install(model, {name: new})
    return per.get(name, 0)


def _mib(n):
    return f"{n / 2**20:.2f} MiB"


def report_lines(report, width):
    """The report's memory lines: what each module keeps and, when measured, the bytes."""
    lines = []
    if report.keeps:
        lines.append("  keeps (for the backward; distinct storages):")
        for n, what in report.keeps:
            lines.append(f"    {n:<{width}}  {what}")
    if report.measured:
        lines.append("  saved activations measured on the example (distinct storages): module, "
                     "before, after")
        for n, b, a in report.measured:
            lines.append(f"    {n:<{width}}  {_mib(b)} -> {_mib(a)}")
    if report.measured_total is not None:
        b, a = report.measured_total
        lines.append(f"  whole model: {_mib(b)} -> {_mib(a)} ({a / b if b else 0:.3f}x)")
    return lines
