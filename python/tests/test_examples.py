"""The training demos run: examples/train_lm.py (the transformer LM, exact vs HOT) for a few steps
with a small model, writing its JSON (and PNG with matplotlib) where --out-dir says, and printing
convert's report and the table; examples/train.py writes its plot under the build tree by
default, never over the tracked docs/train_digits.png."""

import json
import os
import re
import subprocess
import sys

import pytest
from conftest import need

need("torch")

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def env_for(hot):
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(hot.__file__)))
    return dict(os.environ, PYTHONPATH=pkg_parent, HOT_LIBRARY=hot.library_path(),
                OMP_NUM_THREADS="1")


@pytest.mark.parametrize("model", ["gelu", "relu"])
def test_train_lm_runs(hot, tmp_path, model):
    r = subprocess.run([sys.executable, os.path.join(REPO, "examples", "train_lm.py"),
                        "--steps", "3", "--eval-every", "3", "--eval-batches", "1", "--batch",
                        "2", "--seq", "64", "--d-model", "32", "--heads", "2", "--layers", "1",
                        "--text-mb", "0.2", "--threads", "1", "--model", model, "--out-dir",
                        str(tmp_path)],
                       env=env_for(hot), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    # the default is convert(model)'s: every linear map (the head too) and the activation
    assert "hot.torch.convert: 5 converted, 0 skipped" in r.stdout
    assert ("ReLU -> HOTReLU" if model == "relu" else "GELU -> HOTGELU") in r.stdout
    # the default trains HOT in both dtypes, each a row against both exact runs
    assert "| seed | HOT | exact fp32 | exact bf16 | HOT |" in r.stdout
    assert "| 0 | HOT (bf16 autocast) |" in r.stdout and "| 0 | HOT (fp32) |" in r.stdout
    assert "HOT (fp32): time per step" in r.stdout
    res = json.loads((tmp_path / "train_lm.json").read_text())["results"][0]
    h = res["history"]
    assert h["exact"]["val_loss"][0] == h["hot"]["val_loss"][0] or \
        h["bf16"]["val_loss"][0] == h["hot"]["val_loss"][0], "not the same initial weights"
    assert h["exact"]["val_loss"][0] == h["hot_fp32"]["val_loss"][0], "fp32: not the same start"
    assert h["bf16"]["val_loss"][-1] != h["hot"]["val_loss"][-1], "hot did not run"
    assert h["exact"]["val_loss"][-1] != h["hot_fp32"]["val_loss"][-1], "hot fp32 did not run"
    sb = res["saved_bytes"]
    assert sb["hot"] < sb["bf16"] < sb["exact"], sb
    assert sb["hot_fp32"] < sb["exact"], sb
    try:
        import matplotlib  # noqa: F401
        assert (tmp_path / "train_lm.png").is_file()
    except ImportError:
        assert "plot: skipped, matplotlib is not installed" in r.stdout


def test_train_lm_one_step(hot, tmp_path):
    """--steps 1 times no step (step 0 holds the setup): the table says so instead of dividing
    by a zero time."""
    r = subprocess.run([sys.executable, os.path.join(REPO, "examples", "train_lm.py"),
                        "--steps", "1", "--eval-every", "1", "--eval-batches", "1", "--batch",
                        "2", "--seq", "32", "--d-model", "16", "--heads", "2", "--layers", "1",
                        "--text-mb", "0.1", "--threads", "1", "--out-dir", str(tmp_path)],
                       env=env_for(hot), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    for name in ("HOT (bf16 autocast)", "HOT (fp32)"):
        assert f"{name}: time per step not measured (--steps 1 times no step)" in r.stdout, r.stdout


def test_train_lm_profile(hot, tmp_path):
    """--profile N: after the first seed's training (only), each of the four models gets a
    block naming its operators with the most time per step; HOT's linear layers appear as their
    autograd functions."""
    r = subprocess.run([sys.executable, os.path.join(REPO, "examples", "train_lm.py"),
                        "--steps", "2", "--eval-every", "2", "--eval-batches", "1", "--batch",
                        "2", "--seq", "32", "--d-model", "16", "--heads", "2", "--layers", "1",
                        "--text-mb", "0.1", "--threads", "1", "--profile", "2",
                        "--seeds", "0,1", "--out-dir", str(tmp_path)],
                       env=env_for(hot), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert out.count("where a step's time goes (--profile 2") == 1, out  # the first seed's
    for name in ("exact fp32", "exact bf16", "HOT bf16", "HOT fp32"):
        assert re.search(r"^  %s: [0-9.]+ ms a step under the profiler, [0-9.]+ in operators$"
                         % name, out, re.M), out
    assert re.search(r"^ +[0-9.]+  _HOTLinearFunctionBackward$", out, re.M), out
    assert "USDT" not in r.stderr and "profiler_start" not in r.stderr, r.stderr


def test_train_lm_ablation(hot, tmp_path):
    """--ablate FILE: one exact model and one HOT model per line; ABC changes what is kept, not
    the gradients (the same losses bit for bit); a bad line stops before training."""
    variants = tmp_path / "variants.txt"
    variants.write_text("--exact none            # the recipe as it is\n"
                        "--exact none --abc off\n"
                        "--exact in_proj,linear1,linear2,head --hla-selection full\n")
    small = ["--steps", "3", "--eval-every", "3", "--eval-batches", "1", "--batch", "2",
             "--seq", "64", "--d-model", "32", "--heads", "2", "--layers", "1", "--text-mb",
             "0.2", "--threads", "1", "--out-dir", str(tmp_path)]
    script = os.path.join(REPO, "examples", "train_lm.py")
    r = subprocess.run([sys.executable, script, "--ablate", str(variants)] + small,
                       env=env_for(hot), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "| `--exact none --abc off` | recipe hot, exact: none, ABC off, hla_basis spec |" \
        in r.stdout
    res = json.loads((tmp_path / "train_lm_ablation.json").read_text())["results"][0]
    h = res["history"]
    assert set(h) == {"exact", "bf16", "--exact none", "--exact none --abc off",
                      "--exact in_proj,linear1,linear2,head --hla-selection full"}
    assert h["--exact none"]["val_loss"] == h["--exact none --abc off"]["val_loss"]
    assert h["--exact none"]["val_loss"][-1] != h["exact"]["val_loss"][-1]
    assert res["saved_bytes"]["--exact none --abc off"] > res["saved_bytes"]["--exact none"]
    variants.write_text("--exact none\n--hla-block 5\n")
    r = subprocess.run([sys.executable, script, "--ablate", str(variants)] + small,
                       env=env_for(hot), capture_output=True, text=True, timeout=600)
    assert r.returncode != 0
    assert "variant '--hla-block 5'" in r.stderr and "hla.block" in r.stderr
    assert "validation loss exact" not in r.stdout  # stopped before training


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


@pytest.mark.parametrize("script", ["train.py", "train_lm.py"])
def test_examples_prefer_the_installed_package_and_say_which(hot, tmp_path, script):
    """An installed hot (here: a copy of the package with libhot in its folder, as pip puts it,
    on PYTHONPATH) wins over this checkout's python/; without one the checkout's package and
    libhot serve; both say which was used."""
    import shutil
    path = os.path.join(REPO, "examples", script)
    site = tmp_path / "site"
    shutil.copytree(os.path.join(REPO, "python", "hot"), site / "hot",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(os.path.realpath(hot.library_path()), site / "hot" / "libhot.so")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HOT_LIBRARY")}

    def run(extra):
        r = subprocess.run([sys.executable, path, "--help"], env=dict(env, **extra),
                           cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        return r.stdout.splitlines()[0]

    first = run({"PYTHONPATH": str(site)})
    pkg = site / "hot"
    assert first == f"hot: the installed package {pkg}, libhot {pkg / 'libhot.so'}", first
    first = run({"HOT_LIBRARY": os.path.realpath(hot.library_path())})
    if not first.startswith("hot: the installed package"):  # none installed for this python
        assert first.startswith("hot: this checkout's python/ (the installed package is not "
                                "usable: "), first


@pytest.mark.parametrize("script,args,message", [
    ("train.py", ["--seed", "4294967296"], "expected an integer in [0, 4294967295]"),
    ("train.py", ["--out", "{tmp}/"], "--out {tmp}/: is a folder; name a file"),
    ("train.py", ["--out", "{file}/x.png"], "--out {file}/x.png: {file} is not a folder"),
    ("train.py", ["--json", "{file}/x.json"], "--json {file}/x.json: {file} is not a folder"),
    ("train_lm.py", ["--d-model", "30", "--heads", "4"],
     "--d-model 30 is not a multiple of --heads 4"),
    ("train_lm.py", ["--out-dir", "{file}"], "--out-dir {file}: exists and is not a folder"),
    ("train_lm.py", ["--exact", "head,,linear1"], "unknown kind ''"),
    ("train_lm.py", ["--exact", "none,head"], "none goes alone"),
    ("train_lm.py", ["--text-mb", "0.001", "--seq", "2000"],
     "--seq 2000 is longer than the 100 bytes of validation text"),
])
def test_examples_refuse_bad_arguments_before_training(hot, tmp_path, script, args, message):
    """A bad argument (a seed scikit-learn refuses, an output that cannot be written, heads that
    do not divide the width, a malformed list, a sequence longer than the text) stops the run
    before any training with a one-line message, never a traceback at the end."""
    plain = tmp_path / "plain"
    plain.write_text("")
    sub = {"{tmp}": str(tmp_path), "{file}": str(plain)}

    def fill(s):
        for k, v in sub.items():
            s = s.replace(k, v)
        return s
    small = {"train.py": ["--epochs", "1", "--hidden", "8", "--out", str(tmp_path / "d.png")],
             "train_lm.py": ["--steps", "1", "--batch", "1", "--seq", "16", "--d-model", "8",
                             "--heads", "2", "--layers", "1", "--text-mb", "0.05", "--threads",
                             "1", "--out-dir", str(tmp_path / "lm")]}[script]
    r = subprocess.run([sys.executable, os.path.join(REPO, "examples", script)] + small +
                       [fill(a) for a in args], env=env_for(hot), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode != 0, r.stdout
    assert "Traceback" not in r.stderr, r.stderr
    assert fill(message) in r.stderr.splitlines()[-1], r.stderr
    assert "epoch" not in r.stdout and "validation loss" not in r.stdout, r.stdout
