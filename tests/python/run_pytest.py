"""Runs one file of python/tests under pytest for CTest, so that nothing passes silently:

    run_pytest.py --need MODULE FILE   pytest -q -rs FILE; exit 77 (CTest: skipped) with
                                       "SKIP: ..." when MODULE (numpy, torch) cannot be imported
                                       or when every test of FILE skipped (reasons printed by -rs)
    run_pytest.py --skip REASON        prints "SKIP: REASON" and exits 77

Any other outcome is pytest's exit status (0 all passed, 1 a failure, ...); "no tests collected"
is a failure."""

import importlib
import sys


def main(argv):
    if len(argv) == 2 and argv[0] == "--skip":
        print(f"SKIP: {argv[1]}")
        return 77
    if len(argv) != 3 or argv[0] != "--need":
        print("usage: run_pytest.py --need MODULE FILE | --skip REASON", file=sys.stderr)
        return 2
    need, path = argv[1], argv[2]
    for mod in [need, "pytest"]:
        try:
            importlib.import_module(mod)
        except Exception as e:  # ImportError, or a broken install raising something else
            print(f"SKIP: Python module {mod} cannot be imported by {sys.executable} "
                  f"({type(e).__name__}: {e}); install it for that interpreter "
                  "(tools/install-python-deps.sh), or pick another: re-configure with "
                  "-DPython3_EXECUTABLE=$(command -v python3) (CMake keeps the interpreter of "
                  "the first configure)")
            return 77
    import pytest

    class Count:
        def __init__(self):
            self.passed = self.skipped = self.failed = 0

        def pytest_runtest_logreport(self, report):
            if report.when == "call" and report.passed:
                self.passed += 1
            elif report.skipped:
                self.skipped += 1
            elif report.failed:
                self.failed += 1

    c = Count()
    rc = pytest.main(["-q", "-rs", "-p", "no:cacheprovider", path], plugins=[c])
    if rc == 5:
        print(f"FAIL: no tests collected from {path}")
        return 1
    if rc == 0 and c.passed == 0 and c.skipped > 0:
        print(f"SKIP: every test of {path} skipped (reasons above)")
        return 77
    return int(rc)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
