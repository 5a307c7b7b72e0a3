"""install.sh: the full install calls the demo's and the ARM64 emulator's own scripts; --python-only leaves the demo,
Chromium and the emulator out.

The script runs in a throw-away copy of the repository's install files with pip, npm and the demo's install script
replaced by stubs that only record their calls, so these tests are fast and offline. The demo app's tests skip for
missing dependencies only in an environment installed with --python-only (tests/test_demo_app.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

import test_demo_app as demo_tests

ROOT = Path(__file__).resolve().parents[1]
MARKER = Path(".venv") / "edgebert-python-only"
STUB = "#!/bin/sh\necho \"{name} $*\" >> \"{log}\"\n"


def _copy(tmp_path: Path, npm: bool) -> tuple[Path, Path, dict[str, str]]:
    """The repository's install.sh in `tmp_path/repo` with stubs; (repo, call log, env with a PATH of stubs only)."""
    repo, bin_dir, log = tmp_path / "repo", tmp_path / "bin", tmp_path / "calls.log"
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / "demo_app" / "scripts").mkdir(parents=True)
    (repo / "scripts").mkdir()
    bin_dir.mkdir()
    shutil.copy2(ROOT / "install.sh", repo / "install.sh")
    stubs = {repo / ".venv" / "bin" / "python": "python", repo / "demo_app" / "scripts" / "install.sh": "demo-install",
             repo / "scripts" / "install_arm64.sh": "arm64-install"}  # fmt: skip
    if npm:
        stubs[bin_dir / "npm"] = "npm"
    for path, name in stubs.items():
        path.write_text(STUB.format(name=name, log=log))
        path.chmod(0o755)
    for tool in ("dirname", "touch", "rm", "sed", "sh"):  # what install.sh and the stubs run, and nothing else
        (bin_dir / tool).symlink_to(shutil.which(tool))
    return repo, log, {**os.environ, "PATH": str(bin_dir)}


def _install(tmp_path: Path, *args: str, npm: bool = True) -> tuple[subprocess.CompletedProcess[str], Path, list[str]]:
    repo, log, env = _copy(tmp_path, npm)
    proc = subprocess.run([shutil.which("bash"), "install.sh", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=60)
    calls = log.read_text().splitlines() if log.exists() else []
    return proc, repo, calls


def test_full_install_calls_the_demo_script_and_clears_the_python_only_marker(tmp_path: Path) -> None:
    repo, _, env = _copy(tmp_path, npm=True)
    (repo / MARKER).touch()  # left by an earlier --python-only install
    proc = subprocess.run([shutil.which("bash"), "install.sh"], cwd=repo, env=env, capture_output=True, text=True, timeout=60)
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert proc.returncode == 0, proc.stderr
    assert any(c.startswith("npm ci --prefix edgebert/targets/tfjs/js") for c in calls)
    assert calls[-2:] == ["demo-install ", "arm64-install "]
    assert not (repo / MARKER).exists()


def test_python_only_skips_the_demo_and_writes_the_marker(tmp_path: Path) -> None:
    proc, repo, calls = _install(tmp_path, "--python-only")
    assert proc.returncode == 0, proc.stderr
    assert not any(c.startswith(("demo-install", "arm64-install")) for c in calls)
    assert any(c.startswith("python -m pip install --quiet -c constraints.txt -e .[all]") for c in calls)
    assert any(c.startswith("npm ci --prefix edgebert/targets/tfjs/js") for c in calls)
    assert (repo / MARKER).exists()
    assert "demo_app/scripts/install.sh" in proc.stdout


def test_python_only_needs_no_npm_but_the_full_install_does(tmp_path: Path) -> None:
    proc, _, calls = _install(tmp_path / "python-only", "--python-only", npm=False)
    assert proc.returncode == 0, proc.stderr
    assert "npm ci --prefix edgebert/targets/tfjs/js" in proc.stderr  # what to run once Node is there
    assert not any(c.startswith(("npm", "demo-install")) for c in calls)
    proc, _, calls = _install(tmp_path / "full", npm=False)
    assert proc.returncode == 1 and "--python-only" in proc.stderr
    assert not any(c.startswith("demo-install") for c in calls)


def test_unknown_option_is_one_line_and_exit_2(tmp_path: Path) -> None:
    proc, _, calls = _install(tmp_path, "--pyhton-only")
    assert proc.returncode == 2 and calls == []
    assert proc.stderr.strip().count("\n") == 0 and "--pyhton-only" in proc.stderr


def test_demo_tests_skip_for_missing_dependencies_only_after_a_python_only_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "edgebert-python-only"
    monkeypatch.setattr(demo_tests, "PYTHON_ONLY_MARKER", marker)
    with pytest.raises(pytest.fail.Exception, match="demo_app/scripts/install.sh"):
        demo_tests.missing_dependency("no Chromium")
    marker.touch()
    with pytest.raises(pytest.skip.Exception, match="--python-only.*demo_app/scripts/install.sh"):
        demo_tests.missing_dependency("no Chromium")
