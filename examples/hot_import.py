"""Which `hot` package the examples use: the installed one (`pip install ./python`, or one on
PYTHONPATH) when it imports and loads its libhot; else this checkout's python/ with the
checkout's build/runtime/libhot.so (unless HOT_LIBRARY names another). Prints which one it took
and why; exits with both reasons when neither works."""

import importlib
import os
import sys


def _drop_hot():
    for name in [n for n in sys.modules if n == "hot" or n.startswith("hot.")]:
        del sys.modules[name]


def _try():
    """(hot module, None) when hot imports and loads libhot, else (None, reason)."""
    try:
        hot = importlib.import_module("hot")
        hot.library_path()
        return hot, None
    except ImportError as e:
        return None, str(e)
    except OSError as e:  # hot.HotLibraryError
        return None, str(e)


def pick(repo):
    """Imports hot (see the module docstring) and returns it."""
    checkout = os.path.join(repo, "python")
    hot, why = _try()
    if hot is not None:
        where = "this checkout's python/" if os.path.dirname(os.path.dirname(
            os.path.abspath(hot.__file__))) == os.path.abspath(checkout) else "the installed"
        print(f"hot: {where} package {os.path.dirname(hot.__file__)}, libhot "
              f"{hot.library_path()}", flush=True)
        return hot
    _drop_hot()
    sys.path.insert(0, checkout)
    built = os.path.join(repo, "build", "runtime", "libhot.so")
    if not os.environ.get("HOT_LIBRARY") and os.path.exists(built):
        os.environ["HOT_LIBRARY"] = built
    hot2, why2 = _try()
    if hot2 is None:
        sys.exit(f"hot: no usable package. Installed: {why}. This checkout's python/: {why2}. "
                 "Install it (`pip install ./python`) or build libhot (cmake --build build) and "
                 "set HOT_LIBRARY to build/runtime/libhot.so")
    print(f"hot: this checkout's python/ (the installed package is not usable: {why}), libhot "
          f"{hot2.library_path()}", flush=True)
    return hot2


def output_problem(path, folder=False):
    """Why `path` cannot be written (a file, or with folder=True a folder, made with its missing
    parents), or None: checked before any training, so that a run does not end in a traceback."""
    path = os.path.abspath(path)
    if folder:
        if os.path.exists(path) and not os.path.isdir(path):
            return "exists and is not a folder"
        parent = path
    else:
        if os.path.isdir(path) or path.endswith(os.sep):
            return "is a folder; name a file"
        parent = os.path.dirname(path)
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        return f"{parent} is not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{parent} is not writable"
    return None


def numbers(repo):
    """hot's one parser of numbers (python/hot/_numbers.py of this checkout), loaded by path: it
    imports nothing of hot, so the options parse before libhot is looked for."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "hot_numbers", os.path.join(repo, "python", "hot", "_numbers.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
