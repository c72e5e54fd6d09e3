"""`pip install ./python` into a clean virtual environment builds libhot with CMake
(scikit-build-core) and ships it inside the package: the installed package finds its own
libhot.so without HOT_LIBRARY or PYTHONPATH and computes what the build's libhot computes, bit for
bit; HOT_LIBRARY still overrides it.

Needs the network (or pip's cache) for scikit-build-core and numpy: when pip cannot reach an index
and has nothing cached, the test skips, saying so. Slow: pip compiles libhot (about a minute on
2 cores)."""

import os
import subprocess
import sys

import pytest

PY_DIR = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
NETWORK_SIGNS = ("Could not find a version that satisfies", "No matching distribution found",
                 "NewConnectionError", "Temporary failure in name resolution",
                 "Failed to establish a new connection", "Network is unreachable",
                 "ProxyError", "Read timed out", "ConnectTimeoutError")

CODE = """
import sys, numpy as np, hot
ctx = hot.Context("cpu", seed=7)
layer = ctx.create_layer(24, 16, 2, 32, stream="fc")
g = np.random.default_rng(3)
x = g.standard_normal((64, 24), dtype=np.float32)
w = g.standard_normal((16, 24), dtype=np.float32)
gy = g.standard_normal((64, 16), dtype=np.float32)
layer.save(x)
gx, gw, gb = layer.backward(gy, w, step=5)
np.savez(sys.argv[1], gx=gx, gw=gw, gb=gb)
print(hot.__file__)
print(hot.library_path())
"""


def test_pip_install_builds_and_ships_libhot(hot, tmp_path):
    try:
        import venv  # noqa: F401
        import ensurepip  # noqa: F401
    except ImportError as e:
        pytest.skip(f"this Python cannot make virtual environments ({e}; Debian: python3-venv, "
                    "installed by tools/install-deps.sh --tests)")
    venv_dir = tmp_path / "venv"
    r = subprocess.run([sys.executable, "-m", "venv", str(venv_dir)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, f"python -m venv failed: {r.stderr}"
    py = str(venv_dir / "bin" / "python")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "HOT_LIBRARY", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    r = subprocess.run([py, "-m", "pip", "install", PY_DIR], capture_output=True, text=True,
                       env=env, timeout=1500)
    out = r.stdout + r.stderr
    if r.returncode != 0 and any(s in out for s in NETWORK_SIGNS):
        pytest.skip("pip cannot reach a package index and has no cached wheels for the build "
                    "(scikit-build-core) or numpy:\n" + out[-1500:])
    assert r.returncode == 0, f"pip install {PY_DIR} failed:\n{out[-6000:]}"
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, env=env).stdout.strip()
    shipped = os.path.join(site, "hot", "libhot.so")
    assert os.path.isfile(shipped), f"the wheel did not ship hot/libhot.so ({site})"

    # the installed package, from a folder outside the repository, no HOT_LIBRARY
    res_pkg = tmp_path / "pkg.npz"
    r = subprocess.run([py, "-c", CODE, str(res_pkg)], capture_output=True, text=True, env=env,
                       cwd=str(tmp_path), timeout=120)
    assert r.returncode == 0, r.stderr
    pkg_file, used = r.stdout.split("\n")[:2]
    assert pkg_file.startswith(site) and used == shipped, r.stdout
    # HOT_LIBRARY overrides the shipped library
    lib = hot.library_path()
    res_env = tmp_path / "env.npz"
    r = subprocess.run([py, "-c", CODE, str(res_env)], capture_output=True, text=True,
                       env=dict(env, HOT_LIBRARY=lib), cwd=str(tmp_path), timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[1] == lib
    import numpy as np
    a, b = np.load(res_pkg), np.load(res_env)
    for k in ("gx", "gw", "gb"):
        assert a[k].tobytes() == b[k].tobytes(), f"{k}: the shipped libhot differs from the build's"
