"""The training demos run: examples/train_lm.py (the transformer LM, exact vs HOT) for a few steps
with a small model, writing its JSON (and PNG with matplotlib) where --out-dir says, and printing
convert's report and the table; examples/train.py writes its plot under the build tree by
default, never over the tracked docs/train_digits.png."""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch", reason="torch is not installed (tools/install-python-deps.sh)")

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def env_for(hot):
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(hot.__file__)))
    return dict(os.environ, PYTHONPATH=pkg_parent, HOT_LIBRARY=hot.library_path(),
                OMP_NUM_THREADS="1")


def test_train_lm_runs(hot, tmp_path):
    r = subprocess.run([sys.executable, os.path.join(REPO, "examples", "train_lm.py"),
                        "--steps", "3", "--eval-every", "3", "--eval-batches", "1", "--batch",
                        "2", "--seq", "64", "--d-model", "32", "--heads", "2", "--layers", "1",
                        "--text-mb", "0.2", "--threads", "1", "--out-dir", str(tmp_path)],
                       env=env_for(hot), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "hot.torch.convert: 4 converted, 0 skipped" in r.stdout
    assert "| seed | exact: val loss | HOT: val loss |" in r.stdout
    res = json.loads((tmp_path / "train_lm.json").read_text())["results"][0]
    ex, hl = res["history"]["exact"]["val_loss"], res["history"]["hot"]["val_loss"]
    assert ex[0] == hl[0], "both models must start from the same weights"
    assert ex[-1] != hl[-1], "HOT trained exactly like nn.Linear: hot did not run"
    assert res["saved_bytes"]["hot"] < res["saved_bytes"]["exact"]
    try:
        import matplotlib  # noqa: F401
        assert (tmp_path / "train_lm.png").is_file()
    except ImportError:
        assert "plot: skipped, matplotlib is not installed" in r.stdout


def test_train_digits_default_output_is_under_build():
    import importlib.util
    spec = importlib.util.spec_from_file_location("train_digits",
                                                  os.path.join(REPO, "examples", "train.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    argv = sys.argv
    try:
        sys.argv = ["train.py"]
        out = os.path.abspath(mod.parse_args().out)
    finally:
        sys.argv = argv
    assert out.startswith(os.path.join(REPO, "build") + os.sep), out
    assert out != os.path.join(REPO, "docs", "train_digits.png")
