"""edgebert's worker processes: `python -m MODULE SPEC.json`, with the one copy of their environment settings.

TensorFlow runs only in its own process (the TF.js converter, the TFLite fallback converter): it builds from a graph
the torch process captured (`edgebert.targets.torch_graph`), so neither process loads the other's framework, and
TensorFlow's settings (oneDNN fusions off) never reach torch. The bench workers are torch processes started the same way. The parent writes a JSON spec (with the
path where the child writes its JSON result) and the child reads it with `read_spec`; `run_tf` does both ends'
bookkeeping and turns a failed child into one TargetUnavailable naming the child's last error line. `warm` starts a
module's TensorFlow process ahead of its `run_tf` (TensorFlow imports while the torch side loads and captures the
model); the child then waits for its spec on stdin.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from edgebert import cost
from edgebert.errors import TargetUnavailable

# Every TensorFlow process: forced, since a parent's values (USE_TF=0 from edgebert's torch side) would break it.
TF_ENV = {
    "TF_ENABLE_ONEDNN_OPTS": "0",  # else grappler fuses LayerNorm into _MklLayerNorm, which tfjs cannot run
    "TF_CPP_MIN_LOG_LEVEL": "2",
    "CUDA_VISIBLE_DEVICES": "",  # conversions run on the CPU
}
# Torch workers (bench): TF's C++ logging (LiteRT's interpreter) quiet.
TORCH_ENV_DEFAULTS = {"TF_CPP_MIN_LOG_LEVEL": "2"}
# Lines of TF's C++ start-up chatter, not the child's error.
NOISE = ("E0000 ", "W0000 ", "I0000 ", "WARNING: All log messages before absl")
TAIL_LINES = 15
PHASES = "_edgebert_phases"  # the child's cost records (edgebert.cost), adopted into the parent's by run_tf
EDGEBERT_ROOT = Path(__file__).resolve().parents[2]  # the directory holding the edgebert package
WAIT = "--wait"  # a warm child's argument: import TensorFlow, then read the spec's path from stdin
_warm: dict[str, subprocess.Popen] = {}  # module -> its started child waiting for a spec (`warm`)


def apply_env(env: MutableMapping[str, str], tensorflow: bool) -> MutableMapping[str, str]:
    """Put the settings of a TensorFlow (`tensorflow`) or torch worker into `env` (os.environ or a copy); returns it."""
    if tensorflow:
        env.update(TF_ENV)
    else:
        for key, value in TORCH_ENV_DEFAULTS.items():
            env.setdefault(key, value)
    return env


def child_env(tensorflow: bool, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a worker: ours, its settings, unbuffered output, and this edgebert first on PYTHONPATH."""
    env = dict(apply_env(dict(os.environ), tensorflow))
    root = str(EDGEBERT_ROOT)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


def write_spec(directory: Path, spec: dict[str, Any]) -> tuple[Path, Path]:
    """Write `spec` (plus `"result"`: where the child writes its JSON result) into `directory`; (spec, result) paths."""
    spec_file, result_file = Path(directory) / "spec.json", Path(directory) / "result.json"
    spec_file.write_text(json.dumps({**spec, "result": str(result_file)}))
    return spec_file, result_file


def start(
    module: str, spec_file: Path | None, tensorflow: bool, extra_env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.Popen:
    """Start `python -m module SPEC` with nothing on stdin (nothing may prompt), stdout dropped, stderr piped (text);
    without `spec_file`, a warm child (`WAIT`) that reads its spec's path from stdin."""
    return subprocess.Popen(
        [sys.executable, "-m", module, WAIT if spec_file is None else str(spec_file)],
        stdin=subprocess.PIPE if spec_file is None else subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        env=child_env(tensorflow, extra_env),
        cwd=cwd,
    )


def tail(stderr: str, lines: int = TAIL_LINES) -> str:
    """The last meaningful lines of a child's stderr (TF's C++ start-up chatter dropped)."""
    kept = [line for line in (stderr or "").strip().splitlines() if line.strip() and not line.startswith(NOISE)]
    return "\n".join(kept[-lines:])


def run_tf(module: str, spec: dict[str, Any], what: str, timeout_s: float | None = None) -> dict[str, Any]:
    """Run `module` in a TensorFlow process on `spec`; its JSON result, or TargetUnavailable.

    The error's first line names `what`, the exit status and the child's last error line; the stderr tail follows."""
    with tempfile.TemporaryDirectory(prefix="edgebert-tf-") as scratch:
        spec_file, result_file = write_spec(Path(scratch), spec)
        proc, given = _warm.pop(module, None), None
        if proc is not None and proc.poll() is None:
            given = f"{spec_file}\n"
        else:
            if proc is not None:  # a warm child that ended early: reaped, and a cold one does the work
                proc.communicate()
            proc = start(module, spec_file, tensorflow=True, cwd=EDGEBERT_ROOT)
        try:
            _, stderr = proc.communicate(given, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, stderr = proc.communicate()
            raise TargetUnavailable(f"{what} took over {timeout_s:g} s{_last_line(stderr)}\n{tail(stderr)}") from None
        if proc.returncode != 0 or not result_file.exists():
            raise TargetUnavailable(f"{what} failed (exit {proc.returncode}){_last_line(stderr)}\n{tail(stderr)}")
        result = json.loads(result_file.read_text())
        cost.adopt(result.pop(PHASES, []))
        return result


@contextmanager
def warm(module: str) -> Iterator[None]:
    """Start `module`'s TensorFlow process now, for the block's first `run_tf(module, ...)`: the child imports
    TensorFlow beside the caller's work, then waits for its spec. Stopped at the block's end if no call took it."""
    # The working directory is edgebert's own, so nothing in the caller's (a folder named tensorflow/) shadows a
    # package; the spec's paths are absolute.
    _warm[module] = start(module, None, tensorflow=True, cwd=EDGEBERT_ROOT)
    try:
        yield
    finally:
        left = _warm.pop(module, None)
        if left is not None:
            left.kill()
            left.communicate()


def _last_line(stderr: str) -> str:
    last = tail(stderr, 1)
    return f": {last}" if last else ""


def read_spec(argv: list[str] | None = None) -> dict[str, Any]:
    """The child's side: the spec named by `argv[0]` (default sys.argv[1:])."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        raise SystemExit("usage: python -m MODULE SPEC.json (written by edgebert.targets.tf_subprocess)")
    return json.loads(Path(argv[0]).read_text())


def tf_main(body: Callable[[dict[str, Any]], dict[str, Any]], argv: list[str] | None = None) -> int:
    """The child's side of `run_tf`: TF settings into os.environ, `body(spec)`, its result written to spec["result"]."""
    apply_env(os.environ, tensorflow=True)
    argv = sys.argv[1:] if argv is None else argv
    waits = argv == [WAIT]
    with cost.recording() as phases:
        with cost.phase("import tensorflow" + (" (started ahead, beside the torch side)" if waits else "")):
            import tensorflow  # noqa: F401 - timed on its own: every TensorFlow process pays it
        if waits:
            line = sys.stdin.readline().strip()
            if not line:  # the parent went on without this child
                return 0
            argv = [line]
        spec = read_spec(argv)
        result = body(spec)
    Path(spec["result"]).write_text(json.dumps({**result, PHASES: phases}, indent=2))
    return 0
