"""hot's host-memory pool (python/hot/_host_pool.py): blocks handed out again once no tensor uses
them, never while one does; aligned; storages of the tensor's own size; the limit and release
(least recently used blocks dropped first, across size classes);
the environment knob's errors; every large CPU allocation of the bridge going through it; and a
HOTLinear's steps reusing their buffers with the same gradient bits as without the pool."""

import os
import re
import subprocess
import sys

import pytest

from conftest import need  # noqa: E402

torch = need("torch")


@pytest.fixture()
def pool(hot):
    from hot import _host_pool
    _host_pool.release()
    return _host_pool


BIG = (512, 1024)  # 2 MiB of fp32: over MIN_BYTES


def test_block_reused_only_when_free(pool):
    a = pool.empty(BIG, torch.float32)
    s0 = pool.stats()
    v = a[3:7].t()  # a view keeps the block
    del a
    b = pool.empty(BIG, torch.float32)
    assert pool.stats()["made"] == s0["made"] + 1  # the first block is still used by v
    assert b.data_ptr() != v.data_ptr()
    del v
    c = pool.empty(BIG, torch.float32)
    assert pool.stats()["reused"] == s0["reused"] + 1
    assert c.data_ptr() != b.data_ptr()
    c.fill_(1.0)
    b.fill_(2.0)
    assert float(c.sum()) == c.numel() and float(b.sum()) == 2 * b.numel()


def test_aligned_contiguous_own_storage(pool):
    for shape, dt in [((300, 1001), torch.float32), ((1 << 20,), torch.uint8),
                      ((70, 3000), torch.bfloat16)]:
        t = pool.empty(shape, dt)
        assert t.shape == shape and t.dtype == dt and t.is_contiguous()
        assert t.data_ptr() % 64 == 0
        assert t.untyped_storage().nbytes() == t.numel() * t.element_size()


def test_small_and_sizes_apart(pool):
    s0 = pool.stats()
    small = pool.empty((16, 16), torch.float32)
    assert pool.stats()["made"] == s0["made"]  # torch.empty's own
    a = pool.empty((1024, 1024), torch.float32)
    del a
    b = pool.empty((1024, 1020), torch.float32)  # 0.4 % smaller: the same size class
    assert pool.stats()["reused"] == s0["reused"] + 1
    del b
    c = pool.empty((1024, 900), torch.float32)  # 12 % smaller: a block of its own
    assert pool.stats()["made"] == s0["made"] + 2
    del small, c


def test_limit_and_release(pool, monkeypatch):
    monkeypatch.setitem(pool._state, "limit", 3 << 20)
    keep = [pool.empty((1 << 20,), torch.uint8) for _ in range(6)]
    st = pool.stats()
    assert st["blocks"] == 6 and st["free_blocks"] == 0  # used blocks are never dropped
    del keep
    t = pool.empty((1 << 20,), torch.uint8)  # a call trims the free ones to the limit
    assert pool.stats()["free_bytes"] <= 3 << 20 and pool.stats()["free_blocks"] == 2
    assert pool._state["bytes"] == pool.stats()["bytes"]  # the running total a call checks
    del t
    pool.release()
    assert pool.stats()["free_blocks"] == 0
    assert pool._state["bytes"] == pool.stats()["bytes"]
    # under the limit in all (free or not) a call trims nothing: both blocks stay, one free
    u = pool.empty((1 << 20,), torch.uint8)
    v = pool.empty((1 << 20,), torch.uint8)
    del u
    w = pool.empty((1 << 19,), torch.uint8)  # another size class: a new block, no trim
    st = pool.stats()
    assert st["blocks"] == 3 and st["free_blocks"] == 1 and pool._state["bytes"] == st["bytes"]
    del v, w


def test_trim_least_recently_used_first(pool):
    """Over the limit the free block handed out longest ago goes first, whatever its size class:
    not the blocks of the class that was made first."""
    a = pool.empty((1 << 20,), torch.uint8)  # class A, made first
    b = pool.empty((3 << 19,), torch.uint8)  # class B, 1.5 MiB
    del a, b
    a = pool.empty((1 << 20,), torch.uint8)  # A's block handed out again: the newest now
    del a
    keep = pool._size_class(1 << 20)
    with pool._lock:
        pool._trim(keep)  # room for one free block: B's goes
    st = pool.stats()
    assert st["free_blocks"] == 1 and st["free_bytes"] == keep, st
    assert pool._state["bytes"] == st["bytes"] and len(pool._used) == st["blocks"]
    pool.release()
    assert not pool._used


def test_threads_never_share_a_block(pool, monkeypatch):
    """Backwards in several threads: a block is never handed to two live tensors. The check
    that a block is free sleeps here (the GIL goes to another thread right there), so that
    without the pool's lock two threads would take the same block within the run."""
    import threading
    import time
    errors = []
    is_free = pool._is_free

    def slow_is_free(lst, i):
        free = is_free(lst, i)
        if free:  # the window between the check and the taking
            time.sleep(0.0005)
        return free
    monkeypatch.setattr(pool, "_is_free", slow_is_free)

    owners, mu = {}, threading.Lock()  # data pointer -> thread, of every live tensor

    def work(k):
        live = []
        try:
            for r in range(60):
                t = pool.empty((300, 1024), torch.float32)
                with mu:
                    if t.data_ptr() in owners:
                        errors.append("threads %d and %d got the same block"
                                      % (owners[t.data_ptr()], k))
                    owners[t.data_ptr()] = k
                live.append(t)
                while len(live) > (6 if r < 59 else 0):  # the last turn lets go of all
                    old = live.pop(0)
                    with mu:
                        owners.pop(old.data_ptr(), None)
                    del old
        except Exception as e:  # noqa: BLE001 - an error in a thread fails the test
            errors.append("thread %d: %r" % (k, e))
    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors[:3]


def _env_run(value):
    code = ("import torch; from hot import _host_pool as p; "
            "t = p.empty((1024, 1024), torch.float32); print(p.stats()['made'])")
    env = dict(os.environ, HOT_CPU_POOL_MB=value)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)


def test_env_knob(hot):
    assert _env_run("0").stdout.strip() == "0"  # off: torch.empty
    assert _env_run("64").stdout.strip() == "1"
    for bad in ("-1", "12MB", "1e3"):
        r = _env_run(bad)
        assert r.returncode != 0 and f"HOT_CPU_POOL_MB={bad!r}: expected an integer in " \
            "[0, 1048576]" in r.stderr, r.stderr


def test_bridge_allocates_through_pool():
    """The class: every uninitialised buffer the bridge makes for hot to write goes through
    torch.py's _empty (the pool on the CPU); a new torch.empty elsewhere in the package fails
    here (torch's own temporaries, zeros for padding, are torch's business)."""
    root = os.path.join(os.environ.get("HOT_SOURCE_DIR", "."), "python", "hot")
    found = []
    for name in sorted(os.listdir(root)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(root, name)) as f:
            for n, line in enumerate(f, 1):
                if re.search(r"torch\.empty(_like|_strided)?\(|\.new_empty\(", line):
                    found.append((name, line.strip()))
    allowed = {("_host_pool.py", "return torch.empty(shape, dtype=dtype)"),
               ("_host_pool.py", 'esize = getattr(dtype, "itemsize", None) or '
                                 'torch.empty((), dtype=dtype).element_size()'),
               ("torch.py", "return torch.empty(tuple(shape), dtype=dtype, device=device)")}
    assert set(found) <= allowed, sorted(set(found) - allowed)


def _train(ht, pool, steps):
    """steps steps of one HOTLinear from seed 0; (the last step's gradients, the blocks made by
    the last step, the weight gradient's distance from the nearest pooled block)."""
    torch.manual_seed(0)
    lin = ht.HOTLinear(256, 512, tag="pool")
    x = torch.randn(4, 128, 256, requires_grad=True)
    gy = torch.randn(4, 128, 512) * 1e-3
    made = 0
    for _ in range(steps):
        made = pool.stats()["made"]
        x.grad = lin.weight.grad = lin.bias.grad = None
        lin(x).backward(gy)
        made = pool.stats()["made"] - made
    starts = [torch.frombuffer(b, dtype=torch.uint8, count=1).data_ptr()
              for lst in pool._blocks.values() for b in lst]
    wg = lin.weight.grad.data_ptr()
    near = min((wg - s for s in starts if s <= wg), default=None)
    return (x.grad.clone(), lin.weight.grad.clone(), lin.bias.grad.clone()), made, near


def test_hotlinear_steps_reuse_and_same_bits(hot, pool, monkeypatch):
    import hot.torch as ht
    pooled, made, near = _train(ht, pool, 4)
    assert made == 0, "a steady step made new blocks"
    assert near is not None and near < 64, "weight.grad is not hot's pooled buffer"
    monkeypatch.setitem(pool._state, "limit", 0)  # the pool off: torch.empty
    plain, _, _ = _train(ht, pool, 4)
    for a, b in zip(pooled, plain):  # where the gradients live, not their bits
        assert torch.equal(a.view(torch.int32), b.view(torch.int32))
