#!/usr/bin/env bash
# Install edgebert's ARM64 kernel path (qemu user-mode emulation) and prove it computes right. Idempotent.
#
# Into ${EDGEBERT_ARM64_HOME:-<repo>/.arm64}:
#   bin/qemu-aarch64   qemu-aarch64 of Debian 13's qemu-user (pinned version and sha256; a static binary, so it runs
#                      on Debian 12): qemu >= 10, since Debian 12's 7.2 miscomputes int8 on -cpu max
#   rootfs/            a minimal Debian 12 (bookworm) arm64 root with Python 3.11 (debootstrap's first stage plus
#                      the Python packages it fetched, unpacked; never chrooted into: qemu runs it with -L)
#   rootfs/opt/edgebert/site   the aarch64 wheels of numpy, onnxruntime and ai-edge-litert, at the versions of
#                      the repo's constraints.txt (pip --target)
#   executorch/lib     the executorch wheel's aarch64 runtime libraries and edgebert's C interface to them
#                      (edgebert/targets/executorch/arm64_runtime.cpp, built with Debian's aarch64 cross compiler)
#   selftest/          the self-test's models and known answers, and its cached verdict
#   install.json       what was installed, the install's wall time and the home's size
# then runs the self-test (python -m edgebert.arm64 selftest) on every CPU model edgebert checks.
#
# Needs: an x86_64 Debian/Ubuntu host, the repo's .venv (./install.sh), curl, dpkg-deb, gpgv and debootstrap (installed
# with apt-get when missing and running as root), g++-aarch64-linux-gnu for ExecuTorch (likewise). Network: deb.debian.org and PyPI only.
# usage: scripts/install_arm64.sh        (EDGEBERT_DEBIAN_MIRROR overrides http://deb.debian.org/debian)
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
ARM64_HOME="${EDGEBERT_ARM64_HOME:-$REPO/.arm64}"
PY="$REPO/.venv/bin/python"
MIRROR="${EDGEBERT_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

# The emulator: Debian 13 (trixie) qemu-user, pinned. If the archive has moved on (Debian keeps only a suite's
# current version), the newest trixie qemu-user >= 10 is taken instead, verified through trixie's signed index.
QEMU_SUITE=trixie
QEMU_VERSION="1:10.0.13+ds-0+deb13u1"
QEMU_DEB="pool/main/q/qemu/qemu-user_10.0.13+ds-0+deb13u1_amd64.deb"
QEMU_SHA256="ca6ede739327a20ae5a3498230c8a3a9a072c586e131bc6bcc1201eb1725e336"
QEMU_MIN_MAJOR=10
# The arm64 root and what goes into it.
ROOT_SUITE=bookworm
ROOT_PACKAGES=python3.11
ROOT_STAMP="bookworm arm64 minbase+$ROOT_PACKAGES v1"
WHEELS=(numpy onnxruntime ai-edge-litert)
GLIBC_MINOR=36  # bookworm's glibc 2.36: the newest manylinux_2_X tag its python can load

STARTED=$(date +%s)
CHANGED=0  # 1 once a step installed something: install.json then records this run's time as the install's
step() { echo "install_arm64: $*"; }
fail() { echo "install_arm64: error: $*" >&2; exit 1; }
last_line() { grep -v '^\s*$' "$1" | tail -1 | cut -c1-300; }

# ---------------------------------------------------------------------------------------------------- the host
[ "$(uname -m)" = x86_64 ] || fail "the host must be x86_64 Linux (this one is $(uname -m))"
[ -x "$PY" ] || fail "$PY is missing: run ./install.sh first"
"$PY" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || fail "$PY is not Python 3.11 (the arm64 root's)"
for tool in curl dpkg-deb tar xz gpgv sha256sum flock; do
  command -v "$tool" >/dev/null || fail "$tool is missing (Debian: apt-get install curl dpkg tar xz-utils gpgv coreutils util-linux)"
done
[ -r "$KEYRING" ] || fail "$KEYRING is missing (Debian: apt-get install debian-archive-keyring)"
ensure_debootstrap() {  # only when the root is (re)built
  command -v debootstrap >/dev/null && return
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || fail "debootstrap is missing (apt-get install debootstrap, as root)"
  step "installing debootstrap (apt-get)"
  { apt-get install -y -q debootstrap || { apt-get update -q && apt-get install -y -q debootstrap; }; } >"$WORK/apt.log" 2>&1 \
    || fail "apt-get could not install debootstrap: $(last_line "$WORK/apt.log")"
}

mkdir -p "$ARM64_HOME/bin"
exec 9>"$ARM64_HOME/.install.lock"
flock -n 9 || fail "another install_arm64.sh is installing into $ARM64_HOME"
WORK="$(mktemp -d "$ARM64_HOME/.work.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
LOG="$ARM64_HOME/install.log"
: >"$LOG"

# ------------------------------------------------------------------------------------------------- the emulator
QEMU="$ARM64_HOME/bin/qemu-aarch64"
qemu_major() { "$1" --version 2>/dev/null | sed -n '1s/.*version \([0-9]*\)\..*/\1/p'; }

# Sets DEB_PATH, DEB_SHA256, DEB_VERSION from trixie's index, its signature checked with Debian's keyring.
resolve_from_index() {
  curl -fsSL --retry 3 -o "$WORK/InRelease" "$MIRROR/dists/$QEMU_SUITE/InRelease" || fail "cannot fetch $QEMU_SUITE's InRelease from $MIRROR"
  gpgv --keyring "$KEYRING" --output "$WORK/Release" "$WORK/InRelease" >>"$LOG" 2>&1 || fail "$QEMU_SUITE's InRelease signature does not verify"
  local sha
  sha=$(awk '/^SHA256:/{s=1; next} /^[^ ]/{s=0} s && $3 == "main/binary-amd64/Packages.xz" {print $1}' "$WORK/Release")
  [ -n "$sha" ] || fail "$QEMU_SUITE's Release lists no main/binary-amd64/Packages.xz"
  curl -fsSL --retry 3 -o "$WORK/Packages.xz" "$MIRROR/dists/$QEMU_SUITE/main/binary-amd64/Packages.xz" || fail "cannot fetch $QEMU_SUITE's Packages.xz"
  echo "$sha  $WORK/Packages.xz" | sha256sum -c --status || fail "$QEMU_SUITE's Packages.xz does not match its signed sha256"
  read -r DEB_VERSION DEB_PATH DEB_SHA256 < <(xz -dc "$WORK/Packages.xz" | awk -v RS= '/(^|\n)Package: qemu-user\n/ {
      for (i = 1; i <= split($0, l, "\n"); i++) { split(l[i], kv, ": "); f[kv[1]] = kv[2] }
      print f["Version"], f["Filename"], f["SHA256"]; exit }') || true
  [ -n "${DEB_PATH:-}" ] || fail "$QEMU_SUITE's index has no qemu-user"
}

if [ -x "$QEMU" ] && [ "$(cat "$QEMU.sha256" 2>/dev/null)" = "$(sha256sum "$QEMU" | cut -d' ' -f1)" ] \
  && [ "$(qemu_major "$QEMU")" -ge "$QEMU_MIN_MAJOR" ] 2>/dev/null; then
  step "qemu-aarch64 $("$QEMU" --version | sed -n '1s/.*version //p'): already installed"
else
  DEB_PATH="$QEMU_DEB" DEB_SHA256="$QEMU_SHA256" DEB_VERSION="$QEMU_VERSION"
  if ! curl -fsSL --retry 3 -o "$WORK/qemu.deb" "$MIRROR/$QEMU_DEB" 2>>"$LOG"; then
    resolve_from_index
    step "note: the pinned qemu-user $QEMU_VERSION is no longer in the archive; using $QEMU_SUITE's $DEB_VERSION (signed index)"
    curl -fsSL --retry 3 -o "$WORK/qemu.deb" "$MIRROR/$DEB_PATH" || fail "cannot download $MIRROR/$DEB_PATH"
  fi
  echo "$DEB_SHA256  $WORK/qemu.deb" | sha256sum -c --status || fail "qemu-user $DEB_VERSION: sha256 mismatch (expected $DEB_SHA256)"
  mkdir -p "$WORK/qemu"
  dpkg-deb --fsys-tarfile "$WORK/qemu.deb" | tar -x -C "$WORK/qemu" ./usr/bin/qemu-aarch64 || fail "qemu-user $DEB_VERSION has no usr/bin/qemu-aarch64"
  major=$(qemu_major "$WORK/qemu/usr/bin/qemu-aarch64")
  [ -n "$major" ] || fail "qemu-aarch64 of qemu-user $DEB_VERSION does not run on this host"
  [ "$major" -ge "$QEMU_MIN_MAJOR" ] || fail "qemu-user $DEB_VERSION is qemu $major; qemu >= $QEMU_MIN_MAJOR is needed"
  install -m 0755 "$WORK/qemu/usr/bin/qemu-aarch64" "$QEMU.new" && mv -f "$QEMU.new" "$QEMU"
  sha256sum "$QEMU" | cut -d' ' -f1 >"$QEMU.sha256"
  printf '{"package": "qemu-user", "suite": "%s", "version": "%s", "deb": "%s", "deb_sha256": "%s"}\n' \
    "$QEMU_SUITE" "$DEB_VERSION" "$DEB_PATH" "$DEB_SHA256" >"$ARM64_HOME/bin/qemu-aarch64.json"
  CHANGED=1
  step "qemu-aarch64 $("$QEMU" --version | sed -n '1s/.*version //p'): installed (deb sha256 $DEB_SHA256)"
fi

# ---------------------------------------------------------------------------------------------- the arm64 root
ROOT="$ARM64_HOME/rootfs"
# The root's python3.11 under the emulator, in a clean environment (PYTHONPATH: the wheels, when installed).
root_python() { env -i PATH=/usr/bin:/bin LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$1/opt/edgebert/site" \
  "$QEMU" -L "$1" "$1/usr/bin/python3.11" "${@:2}" </dev/null; }
if [ "$(cat "$ROOT/.edgebert-rootfs" 2>/dev/null)" = "$ROOT_STAMP" ] && root_python "$ROOT" -c pass 2>/dev/null; then
  step "arm64 $ROOT_SUITE root with Python $(root_python "$ROOT" -c 'import platform; print(platform.python_version())'): already installed"
else
  ensure_debootstrap
  STAGE="$ARM64_HOME/rootfs.new"
  rm -rf "$STAGE"
  step "arm64 $ROOT_SUITE root: debootstrap (first stage) from $MIRROR ..."
  nice -n 10 debootstrap --foreign --arch=arm64 --variant=minbase --include="$ROOT_PACKAGES" "$ROOT_SUITE" "$STAGE" "$MIRROR" >>"$LOG" 2>&1 \
    || fail "debootstrap of the arm64 $ROOT_SUITE root failed: $(last_line "$LOG")"
  # The first stage unpacks only the required packages; the rest (Python) it fetched for the second stage, which
  # would run in a chroot. They are unpacked here instead (keeping merged /usr's lib -> usr/lib links).
  [ -s "$STAGE/debootstrap/base" ] || fail "debootstrap left no package list in $STAGE/debootstrap/base"
  for package in $(cat "$STAGE/debootstrap/base"); do
    deb=$(awk -v p="$package" '$1 == p {print $2}' "$STAGE/debootstrap/debpaths")
    [ -n "$deb" ] && [ -f "$STAGE$deb" ] || fail "debootstrap fetched no .deb for $package"
    dpkg-deb --fsys-tarfile "$STAGE$deb" | tar -x --keep-directory-symlink -C "$STAGE" || fail "cannot unpack $package"
  done
  rm -rf "$STAGE/debootstrap" "$STAGE/var/cache/apt/archives/"*.deb
  version=$(root_python "$STAGE" -c 'import platform; print(platform.python_version(), platform.machine())' 2>>"$LOG") \
    || fail "the arm64 root's python3.11 does not run under qemu-aarch64: $(last_line "$LOG")"
  echo "$ROOT_STAMP" >"$STAGE/.edgebert-rootfs"
  rm -rf "$ROOT" && mv "$STAGE" "$ROOT"
  CHANGED=1
  step "arm64 $ROOT_SUITE root with Python $version: installed"
fi
# Bytecode for the root's standard library, written by the host's Python 3.11 (same .pyc format): the emulated
# children write none, and compiling under emulation would cost each child's start-up seconds.
if [ ! -f "$ROOT/.edgebert-compiled" ]; then
  nice -n 10 "$PY" -m compileall -q -j 1 -x '(/test/|/tests/|lib2to3|idlelib|turtledemo)' "$ROOT/usr/lib/python3.11" >>"$LOG" 2>&1 || true
  touch "$ROOT/.edgebert-compiled"
  step "arm64 root's standard library: compiled"
fi

# ---------------------------------------------------------------------------------------------- the aarch64 wheels
SITE="$ROOT/opt/edgebert/site"
WHEEL_STAMP="${WHEELS[*]} constraints:$(sha256sum "$REPO/constraints.txt" | cut -d' ' -f1)"
if [ "$(cat "$SITE/.edgebert-wheels" 2>/dev/null)" = "$WHEEL_STAMP" ]; then
  step "aarch64 wheels: already installed"
else
  platforms=(--platform manylinux2014_aarch64)
  for minor in $(seq 17 "$GLIBC_MINOR"); do platforms+=(--platform "manylinux_2_${minor}_aarch64"); done
  rm -rf "$SITE.new"
  nice -n 10 "$PY" -m pip install --quiet --disable-pip-version-check --no-input --target "$SITE.new" "${platforms[@]}" \
    --python-version 3.11 --implementation cp --abi cp311 --only-binary=:all: -c "$REPO/constraints.txt" "${WHEELS[@]}" \
    >"$WORK/pip.log" 2>&1 || { cat "$WORK/pip.log" >>"$LOG"; fail "pip could not install the aarch64 wheels of ${WHEELS[*]}: $(grep -m1 '^ERROR' "$WORK/pip.log" || last_line "$WORK/pip.log")"; }
  cat "$WORK/pip.log" >>"$LOG"
  echo "$WHEEL_STAMP" >"$SITE.new/.edgebert-wheels"
  rm -rf "$SITE" && mv "$SITE.new" "$SITE"
  CHANGED=1
  step "aarch64 wheels: $(cd "$SITE" && ls -d *.dist-info | sed 's/\.dist-info$//' | tr '\n' ' ')"
fi
root_python "$ROOT" -c 'import numpy, onnxruntime, ai_edge_litert.interpreter' >>"$LOG" 2>&1 \
  || fail "the aarch64 wheels do not import under emulation: $(last_line "$LOG")"
step "aarch64 numpy, onnxruntime and ai_edge_litert import under emulation"

# ------------------------------------------------------------------------------------ ExecuTorch's aarch64 runtime
# The executorch wheel's runtime libraries for aarch64 (they need no torch; its Python bindings do) and a small C
# interface to them (edgebert/targets/executorch/arm64_runtime.cpp) built with Debian's aarch64 cross compiler.
# Without it the ONNX and LiteRT paths still run; ExecuTorch exports then say their ARM64 kernels were not checked.
ET_DIR="$ARM64_HOME/executorch"
ET_SOURCE="$REPO/edgebert/targets/executorch/arm64_runtime.cpp"
ET_VERSION=$(sed -n 's/^executorch==//p' "$REPO/constraints.txt")
ET_STAMP="executorch $ET_VERSION source:$(sha256sum "$ET_SOURCE" | cut -d' ' -f1)"
install_executorch() {
  if ! command -v aarch64-linux-gnu-g++ >/dev/null; then
    [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || { echo "aarch64-linux-gnu-g++ is missing (apt-get install g++-aarch64-linux-gnu, as root)"; return 1; }
    step "installing the aarch64 cross compiler (apt-get install g++-aarch64-linux-gnu)" >&2
    { apt-get install -y -q g++-aarch64-linux-gnu || { apt-get update -q && apt-get install -y -q g++-aarch64-linux-gnu; }; } \
      >"$WORK/apt-cross.log" 2>&1 || { echo "apt-get could not install g++-aarch64-linux-gnu: $(last_line "$WORK/apt-cross.log")"; return 1; }
  fi
  rm -rf "$WORK/et" "$ET_DIR.new" && mkdir -p "$WORK/et" "$ET_DIR.new/lib"
  nice -n 10 "$PY" -m pip download --quiet --disable-pip-version-check --no-input --no-deps --dest "$WORK/et" \
    --platform "manylinux_2_28_aarch64" --python-version 3.11 --implementation cp --abi cp311 --only-binary=:all: \
    "executorch==$ET_VERSION" >"$WORK/et-pip.log" 2>&1 || { echo "pip could not download the aarch64 executorch $ET_VERSION wheel: $(last_line "$WORK/et-pip.log")"; return 1; }
  "$PY" -m zipfile -e "$WORK"/et/executorch-*.whl "$WORK/et/wheel" || { echo "the executorch wheel does not unpack"; return 1; }
  local et="$WORK/et/wheel/executorch"
  cp "$et"/lib/libexecutorch*.so "$ET_DIR.new/lib/"
  aarch64-linux-gnu-g++ -std=c++17 -O2 -fPIC -shared -w -DC10_USING_CUSTOM_GENERATED_MACROS -o "$ET_DIR.new/lib/libedgebert_et.so" "$ET_SOURCE" \
    -I"$et/include" -I"$et/include/executorch/runtime/core/portable_type/c10" -L"$et/lib" -Wl,--no-as-needed \
    -lexecutorch -lexecutorch_kernels_optimized -lexecutorch_kernels_quantized -lexecutorch_backend_xnnpack -lexecutorch_threadpool \
    -Wl,-rpath,'$ORIGIN' >"$WORK/et-build.log" 2>&1 || { echo "building the ExecuTorch interface failed: $(last_line "$WORK/et-build.log")"; return 1; }
  echo "$ET_STAMP" >"$ET_DIR.new/.edgebert-executorch"
  rm -rf "$ET_DIR" && mv "$ET_DIR.new" "$ET_DIR"
}
if [ "$(cat "$ET_DIR/.edgebert-executorch" 2>/dev/null)" = "$ET_STAMP" ]; then
  step "ExecuTorch aarch64 runtime: already installed"
elif [ -z "$ET_VERSION" ]; then
  step "ExecuTorch aarch64 runtime: not installed (constraints.txt pins no executorch)"
elif why=$(install_executorch); then
  CHANGED=1
  step "ExecuTorch aarch64 runtime $ET_VERSION: $ET_DIR/lib"
else
  rm -rf "$ET_DIR.new"
  step "ExecuTorch aarch64 runtime: not installed: $why (ExecuTorch exports will say their ARM64 kernels were not checked)"
fi

# ---------------------------------------------------------------------------------------------------- self-test
cd "$REPO"
# (LiteRT announces its XNNPACK delegate on stderr when the host computes the case's reference; not news here)
EDGEBERT_ARM64_HOME="$ARM64_HOME" "$PY" -m edgebert.arm64 selftest </dev/null 2> >(grep -v '^INFO: Created TensorFlow Lite XNNPACK' >&2 || true) \
  || fail "the self-test failed: this emulator cannot be trusted with int8 kernels (see above)"

rm -rf "$WORK"
seconds=$(($(date +%s) - STARTED))
megabytes=$(du -sm "$ARM64_HOME" | cut -f1)
"$PY" - "$ARM64_HOME" "$seconds" "$megabytes" "$CHANGED" <<'EOF'
import json, sys, time
from pathlib import Path
home, seconds, megabytes, changed = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
previous = json.loads((home / "install.json").read_text()) if (home / "install.json").is_file() else {}
qemu = json.loads((home / "bin" / "qemu-aarch64.json").read_text())
site = home / "rootfs" / "opt" / "edgebert" / "site"
record = {"qemu": qemu, "root": (home / "rootfs" / ".edgebert-rootfs").read_text().strip(),
          "wheels": sorted(p.name.removesuffix(".dist-info") for p in site.glob("*.dist-info")),
          "executorch": (home / "executorch" / ".edgebert-executorch").read_text().strip() if (home / "executorch" / ".edgebert-executorch").is_file() else None,
          "install_seconds": seconds if changed or "install_seconds" not in previous else previous["install_seconds"],
          "last_run_seconds": seconds, "megabytes": megabytes, "finished": time.strftime("%Y-%m-%dT%H:%M:%S")}
(home / "install.json").write_text(json.dumps(record, indent=1) + "\n")
EOF
step "done in ${seconds} s; $ARM64_HOME holds ${megabytes} MB"
