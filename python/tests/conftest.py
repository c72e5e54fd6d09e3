"""Shared fixtures of the hot Python tests.

Environment (set by tests/python/CMakeLists.txt under CTest; set them by hand to run pytest
directly): HOT_LIBRARY (libhot.so), HOT_PY_HELPER (the hot_py_helper program, for the ABI and
bit-for-bit checks against C), HOT_SOURCE_DIR (the repository, for spec files). Tests run the
CPU backend (HOT_BACKEND=cpu is set here too; the CUDA tests of test_torch.py name their backend).
Kernel cache: memory only (HOT_NO_DISK_CACHE=1), unless HOT_CACHE_DIR names a directory (CMake
option HOT_TEST_CACHE_DIR; tools/device-check.sh points it at the prepared cache), which is then
the disk cache."""

import importlib
import os
import subprocess
import sys

import pytest

os.environ.setdefault("HOT_BACKEND", "cpu")
if not os.environ.get("HOT_CACHE_DIR"):
    os.environ.setdefault("HOT_NO_DISK_CACHE", "1")

SOURCE_DIR = os.environ.get("HOT_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))


def missing_module_reason(module, error=None):
    """The skip line of a test that needs a Python module this interpreter lacks: it names the
    interpreter (CTest runs the one CMake found at the first configure, not an environment
    activated later) and how to pick another."""
    why = f" ({error})" if error else ""
    return (f"Python module {module} cannot be imported by {sys.executable}{why}: install it "
            "for that interpreter (tools/install-python-deps.sh), or run the tests with another "
            "one (pytest: that python -m pytest; ctest: re-configure with "
            "-DPython3_EXECUTABLE=$(command -v python3))")


def need(module):
    """pytest.importorskip(module) with missing_module_reason's skip line."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        pytest.skip(missing_module_reason(module, e), allow_module_level=True)


@pytest.fixture(scope="session")
def hot():
    """The hot package with its library loaded. Without HOT_LIBRARY and with no libhot found
    the tests skip (with the reason); a HOT_LIBRARY that does not load is a failure (CTest sets
    it to the library it built)."""
    import hot as hot_pkg
    try:
        hot_pkg._lib.find_library()
    except hot_pkg.HotLibraryError as e:
        if os.environ.get("HOT_LIBRARY"):
            pytest.fail(f"HOT_LIBRARY is set but unusable: {e}")
        pytest.skip(f"libhot.so not available: {e}")
    return hot_pkg


@pytest.fixture(scope="session")
def helper():
    """Path of hot_py_helper (skips, with the reason, when HOT_PY_HELPER is not set)."""
    p = os.environ.get("HOT_PY_HELPER")
    if not p or not os.path.exists(p):
        pytest.skip("HOT_PY_HELPER (the hot_py_helper program of tests/python) is not set; "
                    "run through ctest")
    return p


def run_helper(helper, *args):
    r = subprocess.run([helper, *map(str, args)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"hot_py_helper {' '.join(map(str, args))}: {r.stderr}"
    return r.stdout


@pytest.fixture
def spec_dir():
    return os.path.join(SOURCE_DIR, "tests", "specs")
