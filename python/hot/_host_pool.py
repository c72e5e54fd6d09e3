"""The host-memory pool of hot's PyTorch bridge: the large CPU tensors hot allocates every step
(the gradients g_x, g_w, g_b its backward writes, the codes its forward keeps) come from blocks
that are kept and handed out again once no tensor uses them, instead of torch.empty's fresh
allocation each time.

Why: glibc's malloc serves a large request from the top of its heap and gives the top back to
the kernel when more than its trim threshold (twice the largest block it has unmapped, at most
64 MiB) lies free there, so a step that frees its previous gradients and allocates new ones can
find its memory unmapped and map it again: every page is then faulted in and zeroed by the
kernel, on every step. Whether that happens depends on the order of the process's allocations;
for a 2048 -> 2048 layer it cost about half of hot's backward time. A kept block's pages stay
mapped, so a step touches no new page.

How: a block is a bytearray (pages touched once, when it is made); a tensor over it is made by
torch.frombuffer, whose storage holds a reference to the bytearray for as long as it lives. A
block is free when the pool holds the only reference. Blocks are matched by size class
(`_size_class`; a block up to 4 % larger serves a request too). Free blocks beyond
`limit_bytes` (HOT_CPU_POOL_MB, default 2048 MiB; 0 turns the pool off) are dropped, least
recently handed out first, whatever their size class; `release()` drops every free block.
Requests under `MIN_BYTES` go to torch.empty (small allocations do not reach the heap top).
Only for CPU tensors; the CUDA caching allocator already keeps its blocks. A lock makes the
pool safe for backwards running in several threads (the check that a block is free and taking it
are one step).
"""
import sys
import threading

import torch

from . import _numbers

MIN_BYTES = 256 * 1024  # smaller requests: torch.empty
_ALIGN = 64             # data alignment of a pooled tensor (hot asks 16; 64 is a cache line)
_ENV = "HOT_CPU_POOL_MB"
_DEFAULT_MB = 2048
_SLACK = 1.04           # a free block up to 4 % larger than the request serves it

_blocks = {}   # size class -> list of bytearrays, oldest first
_used = {}     # id(block) -> when it was last handed out (_state["clock"]), for every block kept
_lock = threading.Lock()
_state = {"limit": None, "made": 0, "reused": 0, "bytes": 0,  # bytes: of every block, free or not
          "clock": 0}                                          # blocks handed out so far


def _size_class(nbytes):
    """The block size serving nbytes (and the alignment's slack): a multiple of 4 KiB and of
    1/64 of the power of two above it, so that sizes within 1.6 % share blocks."""
    n = max(int(nbytes) + _ALIGN, 4096)
    step = max(4096, 1 << max(0, n.bit_length() - 7))
    return -(-n // step) * step


def limit_bytes():
    """The most bytes the pool keeps in free blocks: HOT_CPU_POOL_MB (an integer of MiB in
    [0, 1048576], 0 = no pool; hot's one parser of numbers) read once, default 2048 MiB. A
    malformed value raises ValueError naming the variable and the range."""
    if _state["limit"] is None:
        _state["limit"] = _numbers.env_int(_ENV, 0, 1 << 20, _DEFAULT_MB) * 1024 * 1024
    return _state["limit"]


def _is_free(lst, i):
    # references: the list's and getrefcount's argument; a tensor's storage adds one
    return sys.getrefcount(lst[i]) <= 2


def _trim(limit):
    """Drops free blocks, least recently handed out first (whatever their size class), until
    the free ones hold at most limit bytes."""
    free = [(size, lst, i) for size, lst in _blocks.items() for i in range(len(lst))
            if _is_free(lst, i)]
    free.sort(key=lambda f: _used[id(f[1][f[2]])])
    total = sum(size for size, _, _ in free)
    drop = {}
    for size, lst, i in free:
        if total <= limit:
            break
        drop.setdefault(size, set()).add(i)
        total -= size
    for size, idx in drop.items():
        lst = _blocks[size]
        for i in idx:
            del _used[id(lst[i])]
        lst[:] = [b for i, b in enumerate(lst) if i not in idx]
        _state["bytes"] -= size * len(idx)
        if not lst:
            del _blocks[size]


def empty(shape, dtype):
    """An uninitialised C-contiguous CPU tensor of shape and dtype, 64-byte aligned, over a
    pooled block (or torch.empty's own allocation when it is small or the pool is off). The
    tensor owns a reference to its block; the block returns to the pool when the tensor and
    every view of it are gone. Raises what torch.empty raises (MemoryError when out of memory)."""
    numel = 1
    for d in shape:
        numel *= int(d)
    esize = getattr(dtype, "itemsize", None) or torch.empty((), dtype=dtype).element_size()
    nbytes = numel * esize
    limit = limit_bytes()
    if nbytes < MIN_BYTES or limit == 0:
        return torch.empty(shape, dtype=dtype)
    with _lock:
        block = _take(_size_class(nbytes))
        off = (-torch.frombuffer(block, dtype=torch.uint8, count=1).data_ptr()) % _ALIGN
        # the storage spans exactly the tensor's bytes (what a count of storages reports)
        out = torch.frombuffer(block, dtype=dtype, count=numel, offset=off).view(shape)
        del block
        if _state["bytes"] > limit:  # else the free blocks, a part of all, are within the limit
            _trim(limit)
    return out


def _take(size):
    """A free block of size class size, or one made now; kept in the pool (newest last)."""
    block = None
    # a free block of this class, else of a class at most _SLACK larger (classes are buckets:
    # two sizes close together can fall on either side of a boundary)
    for have in sorted(k for k in _blocks if size <= k <= size * _SLACK):
        lst = _blocks[have]
        for i in range(len(lst)):
            if _is_free(lst, i):
                block = lst.pop(i)
                size = have
                _state["reused"] += 1
                break
        if block is not None:
            break
    if block is None:
        block = bytearray(size)  # zero-filled: its pages are touched here, once
        _state["made"] += 1
        _state["bytes"] += size
    _blocks.setdefault(size, []).append(block)  # newest last
    _state["clock"] += 1
    _used[id(block)] = _state["clock"]
    return block


def release():
    """Drops every free block (those still used by a tensor stay until it is gone)."""
    with _lock:
        _trim(0)


def stats():
    """{"blocks", "free_blocks", "bytes", "free_bytes", "made", "reused"}: the pool now, and how
    many blocks were made and handed out again since the process started."""
    n = nf = b = bf = 0
    with _lock:
        for size, lst in _blocks.items():
            for i in range(len(lst)):
                n += 1
                b += size
                if _is_free(lst, i):
                    nf += 1
                    bf += size
    return {"blocks": n, "free_blocks": nf, "bytes": b, "free_bytes": bf,
            "made": _state["made"], "reused": _state["reused"]}
