"""The same seed gives the same run, bit for bit, in separate processes (repro_worker.py): a
process that made other hot layers first draws what a fresh one draws (each module's random
stream is keyed by its qualified name, not by creation order), and a run resumed from a
checkpoint (model and optimizer state dicts, hot_step and the LQS choices inside the model's)
ends with the weights of the uninterrupted run. Another HOT_SEED gives another run (the check
can fail)."""

import os
import subprocess
import sys

import pytest
from conftest import need

torch = need("torch")

STEPS = 4


def run(hot, tmp_path, name, *args, env_extra=None):
    worker = os.path.join(os.path.dirname(__file__), "repro_worker.py")
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(hot.__file__)))
    env = dict(os.environ, PYTHONPATH=pkg_parent + os.pathsep + os.environ.get("PYTHONPATH", ""),
               HOT_LIBRARY=hot.library_path(), OMP_NUM_THREADS="1")
    env.pop("HOT_SEED", None)
    env.update(env_extra or {})
    out = tmp_path / f"{name}.pt"
    r = subprocess.run([sys.executable, worker, str(out), str(STEPS), *map(str, args)], env=env,
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, f"repro_worker {name} failed:\n{r.stdout}{r.stderr}"
    return torch.load(out, weights_only=False)


def same_bits(a, b):
    return len(a) == len(b) and all(
        x.shape == y.shape and torch.equal(x.view(torch.int32), y.view(torch.int32))
        for x, y in zip(a, b))


@pytest.fixture(scope="module")
def fresh(hot, tmp_path_factory):
    return run(hot, tmp_path_factory.mktemp("fresh"), "fresh")


def test_same_run_whatever_was_created_before(hot, tmp_path, fresh):
    noisy = run(hot, tmp_path, "noisy", "--noise", 3)
    assert same_bits(fresh["params"], noisy["params"]), \
        "a process that made other hot layers first trained differently"
    assert fresh["ids"] == noisy["ids"]
    for name, ids in fresh["ids"].items():
        assert ids == [hot.layer_id_for(name)], (name, ids)
    assert set(fresh["ids"]) == {"emb", "block.self_attn.in_proj.qkv", "block.self_attn.out_proj",
                                 "block.linear1", "block.linear2", "head"}
    assert set(fresh["steps"].values()) == {STEPS}


def test_resume_from_checkpoint_bit_for_bit(hot, tmp_path, fresh):
    ck = tmp_path / "ck.pt"
    run(hot, tmp_path, "first_half", "--save-at", 2, ck)
    saved = torch.load(ck, weights_only=False)["model"]
    assert saved["head._extra_state"]["hot_step"] == 2
    assert saved["block.self_attn._extra_state"]["in_proj"]["qkv"]["hot_step"] == 2
    assert saved["head._extra_state"]["hot_calibration"], "the LQS choice is not in the state"
    resumed = run(hot, tmp_path, "resumed", "--resume", ck)
    assert same_bits(fresh["params"], resumed["params"]), \
        "the resumed run differs from the uninterrupted one"
    assert resumed["steps"] == fresh["steps"]


def test_another_seed_gives_another_run(hot, tmp_path, fresh):
    other = run(hot, tmp_path, "seed1", env_extra={"HOT_SEED": "1"})
    assert not same_bits(fresh["params"], other["params"])
