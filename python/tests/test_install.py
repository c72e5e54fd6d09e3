"""`pip install ./python` (setuptools, pure Python) gives a package that finds libhot through
HOT_LIBRARY or in its own folder."""

import os
import shutil
import subprocess
import sys

import pytest

PY_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def test_pip_install_and_library_lookup(hot, tmp_path):
    try:
        import setuptools  # noqa: F401
    except ImportError:
        pytest.skip("setuptools is not installed: pip cannot build the package offline")
    src = tmp_path / "src"
    shutil.copytree(PY_DIR, src, ignore=shutil.ignore_patterns("tests", "__pycache__", "build",
                                                                "*.egg-info", "libhot.so"))
    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps",
                        "--no-build-isolation", "--no-index", "--target", str(target), str(src)],
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    code = ("import hot, sys\n"
            "c = hot.Context('cpu')\n"
            "l = c.create_layer(8, 4, 1, 16)\n"
            "print(hot.__file__)\nprint(hot.library_path())\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HOT_LIBRARY")}
    env["PYTHONPATH"] = str(target)
    lib = hot.library_path()
    r = subprocess.run([sys.executable, "-c", code], env=dict(env, HOT_LIBRARY=lib),
                       capture_output=True, text=True, cwd=str(tmp_path), timeout=60)
    assert r.returncode == 0, r.stderr
    pkg_file, used = r.stdout.split("\n")[:2]
    assert pkg_file.startswith(str(target)) and used == lib
    # Without HOT_LIBRARY: a libhot.so in the package folder is found first.
    shutil.copy(lib, target / "hot" / "libhot.so")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       cwd=str(tmp_path), timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[1] == str(target / "hot" / "libhot.so")
