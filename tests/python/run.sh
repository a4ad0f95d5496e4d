#!/usr/bin/env bash
# Runs the official Python SDK (`runpod` from PyPI, unchanged) against the emulator.
#
# Does all its own set-up: a venv with pinned runpod and pytest, a build of the emulator,
# an emulator on a free port, pytest, and the emulator stopped again. Needs only Python 3.10+
# with venv, cargo, and access to PyPI and crates.io.
#
#   tests/python/run.sh            # all tests
#   tests/python/run.sh -k stream  # extra arguments go to pytest
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RUNPOD_VERSION=1.12.0
PYTEST_VERSION=8.3.4
PYTHON=${PYTHON:-python3}
VENV=${EMULATOR_SDK_VENV:-${TMPDIR:-/tmp}/gpucloud-emulator-sdk-venv-$RUNPOD_VERSION}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}

if ! "$VENV/bin/python" -c "import runpod, pytest, sys; sys.exit(runpod.__version__ != '$RUNPOD_VERSION')" 2>/dev/null; then
  echo "==> creating $VENV with runpod==$RUNPOD_VERSION"
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    "runpod==$RUNPOD_VERSION" "pytest==$PYTEST_VERSION"
fi

echo "==> building the emulator"
(cd "$ROOT" && cargo build --quiet --bin gpucloud-operator)
WORK=$(mktemp -d)
# Keep a private copy: a shared CARGO_TARGET_DIR may be rebuilt by someone else meanwhile.
cp "$TARGET/debug/gpucloud-operator" "$WORK/gpucloud-operator"

KEY="sdk-$RANDOM$RANDOM$RANDOM"
"$WORK/gpucloud-operator" emulator --listen 127.0.0.1:0 --api-key "$KEY" >"$WORK/emulator.log" 2>&1 &
PID=$!
cleanup() {
  kill "$PID" 2>/dev/null || true
  wait "$PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

URL=""
for _ in $(seq 1 200); do
  URL=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$WORK/emulator.log" | head -n 1 || true)
  [ -n "$URL" ] && break
  if ! kill -0 "$PID" 2>/dev/null; then
    cat "$WORK/emulator.log"
    exit 1
  fi
  sleep 0.1
done
[ -n "$URL" ] || { echo "emulator did not start"; cat "$WORK/emulator.log"; exit 1; }
echo "==> emulator at $URL"

export RUNPOD_API_BASE_URL="$URL"
export RUNPOD_ENDPOINT_BASE_URL="$URL/v2"
export EMULATOR_BASE_URL="$URL"
export EMULATOR_API_KEY="$KEY"
# Keep a developer's real ~/.runpod credentials out of the test.
export HOME="$WORK"
"$VENV/bin/python" -m pytest -q -p no:cacheprovider "$ROOT/tests/python" "$@"
