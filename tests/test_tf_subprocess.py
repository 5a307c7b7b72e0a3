"""The one way edgebert starts a worker process: its environment, the JSON spec and result, failures as one error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from edgebert.errors import TargetUnavailable
from edgebert.targets import tf_subprocess
from edgebert import cost
from edgebert.targets.tf_subprocess import TF_ENV, apply_env, child_env, run_tf, tail, warm

# A TF child that imports no TensorFlow: it reports its environment, echoes its spec, or fails as asked.
PROBE = '''
import os, sys, time
from edgebert.targets.tf_subprocess import tf_main


def body(spec):
    sys.stderr.write("E0000 00:00:00 cuda_dnn.cc] start-up noise\\n")
    if spec.get("sleep"):
        time.sleep(spec["sleep"])
    if spec.get("fail"):
        raise ValueError("probe failed: " + spec["fail"])
    keys = ["TF_ENABLE_ONEDNN_OPTS", "TF_CPP_MIN_LOG_LEVEL", "CUDA_VISIBLE_DEVICES", "PYTHONUNBUFFERED"]
    return {"env": {k: os.environ.get(k) for k in keys}, "echo": spec["echo"], "stdin": sys.stdin.read(), "pid": os.getpid()}


sys.exit(tf_main(body))
'''


@pytest.fixture
def probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The module name of the probe child, importable through PYTHONPATH (which child_env keeps)."""
    (tmp_path / "edgebert_tf_probe.py").write_text(PROBE)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    return "edgebert_tf_probe"


def test_child_gets_the_tf_settings_and_the_spec(probe: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "1")  # would fuse LayerNorm into an op tfjs cannot run
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    result = run_tf(probe, {"echo": {"a": [1, 2]}}, "the probe")
    assert result["echo"] == {"a": [1, 2]} and result["stdin"] == ""
    assert result["env"] == {**TF_ENV, "PYTHONUNBUFFERED": "1"}


def test_child_failure_is_one_clear_error(probe: str) -> None:
    with pytest.raises(TargetUnavailable) as info:
        run_tf(probe, {"echo": None, "fail": "boom"}, "the probe")
    first, *rest = str(info.value).splitlines()
    assert first == "the probe failed (exit 1): ValueError: probe failed: boom"
    assert "Traceback (most recent call last):" in rest and not any("E0000" in line for line in rest)


def test_child_timeout_is_one_clear_error(probe: str) -> None:
    with pytest.raises(TargetUnavailable, match=r"^the probe took over 0.5 s"):
        run_tf(probe, {"echo": None, "sleep": 30}, "the probe", timeout_s=0.5)


def test_a_warm_child_imports_ahead_and_takes_the_next_call(probe: str) -> None:
    with cost.recording() as phases, warm(probe):
        started = tf_subprocess._warm[probe].pid
        result = run_tf(probe, {"echo": [3]}, "the probe")
        assert probe not in tf_subprocess._warm  # taken: the next call starts its own child
        again = run_tf(probe, {"echo": [4]}, "the probe")
    assert (result["pid"], result["echo"], result["stdin"]) == (started, [3], "")
    assert again["pid"] != started and again["echo"] == [4]
    names = [p["phase"] for p in phases]
    assert names.count("import tensorflow (started ahead, beside the torch side)") == 1 and "import tensorflow" in names


def test_an_unused_warm_child_is_stopped_with_its_block(probe: str) -> None:
    with warm(probe):
        child = tf_subprocess._warm[probe]
    assert child.poll() is not None and probe not in tf_subprocess._warm


def test_torch_workers_keep_the_users_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "1")
    env = child_env(tensorflow=False, extra={"EDGEBERT_BENCH_PARENT": "1"})
    assert env["TF_CPP_MIN_LOG_LEVEL"] == "0" and env["EDGEBERT_BENCH_PARENT"] == "1" and env["TF_ENABLE_ONEDNN_OPTS"] == "1"
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(tf_subprocess.EDGEBERT_ROOT)
    assert (tf_subprocess.EDGEBERT_ROOT / "edgebert" / "families.py").is_file()
    assert apply_env({"TF_CPP_MIN_LOG_LEVEL": "1"}, tensorflow=False) == {"TF_CPP_MIN_LOG_LEVEL": "1"}
    assert apply_env({"TF_ENABLE_ONEDNN_OPTS": "1"}, tensorflow=True) == TF_ENV


def test_tail_drops_tensorflow_startup_noise() -> None:
    text = "E0000 00:00 cuda_dnn.cc] noise\nTraceback (most recent call last):\nOSError: boom\n"
    assert tail(text) == "Traceback (most recent call last):\nOSError: boom"
    assert tail(text, 1) == "OSError: boom" and tail("") == ""
