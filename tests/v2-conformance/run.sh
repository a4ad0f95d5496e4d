#!/usr/bin/env bash
# Runs schemathesis, a schema-driven API tester, against the emulator's REST v2: valid and
# invalid requests to every served operation of the published document (our stripped copy,
# tests/fixtures/platform-rest-v2.openapi.json), each answer checked against the schema
# documented for its status code.
#
# Does all its own set-up: a venv with the pinned schemathesis (requirements.txt beside this
# file), a build of the emulator, an emulator on a free port, the run, the emulator stopped
# again. Needs only Python 3.11+ (tomllib reads refused-valid.toml) with venv, cargo, and
# access to PyPI and crates.io.
#
#   tests/v2-conformance/run.sh                          # the bounded, seeded run
#   tests/v2-conformance/run.sh --include-operation-id getPod   # extra arguments go to
#                                                        # `schemathesis run`
# Environment: V2_CONFORMANCE_MAX_EXAMPLES (default 20) and V2_CONFORMANCE_SEED (default
# 20261122) change the run's size and seed; V2_CONFORMANCE_REPORT_DIR keeps the JUnit report.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
REQUIREMENTS=$HERE/requirements.txt
FIXTURE=$ROOT/tests/fixtures/platform-rest-v2.openapi.json
NOT_SERVED=$HERE/not-served.txt
MAX_EXAMPLES=${V2_CONFORMANCE_MAX_EXAMPLES:-20}
SEED=${V2_CONFORMANCE_SEED:-20261122}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}

# Python 3.12 or newer where there is one. hypothesis parses source code while it describes
# strategies, and on CPython 3.11 two threads doing so at once can fail with "SystemError: AST
# constructor recursion depth mismatch": with two workers, 2 runs in 3 here lost an operation
# to it, while 3.13 ran clean. On an older Python the run uses one worker instead.
runs() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; }
newer() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; }
pyenv_python() {
  local prefix
  prefix=$(pyenv prefix "$(pyenv latest "$1" 2>/dev/null)" 2>/dev/null) || return 0
  [ -n "$prefix" ] && echo "$prefix/bin/python3"
}
if [ -z "${PYTHON:-}" ]; then
  for candidate in python3.13 python3.12 "$(pyenv_python 3.13)" "$(pyenv_python 3.12)" python3; do
    if [ -n "$candidate" ] && runs "$candidate"; then PYTHON=$candidate; break; fi
  done
fi
runs "${PYTHON:-}" || { echo "error: the run needs Python 3.11 or newer (schemathesis, tomllib)" >&2; exit 1; }
WORKERS=2
if ! newer "$PYTHON"; then
  WORKERS=1
  echo "note: $("$PYTHON" --version) is older than 3.12: one schemathesis worker (see run.sh)"
fi

PYTHON_VERSION=$("$PYTHON" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
PIN=$( { cat "$REQUIREMENTS"; echo "$PYTHON_VERSION"; } | sha256sum | cut -c1-12)
VENV=${V2_CONFORMANCE_VENV:-${TMPDIR:-/tmp}/gpucloud-v2-conformance-venv-$PIN}
# Reused only when it was made from exactly these pins and this Python, and finished installing.
if ! { cat "$REQUIREMENTS"; echo "$PYTHON_VERSION"; } | cmp -s - "$VENV/pinned"; then
  echo "==> creating $VENV (Python $PYTHON_VERSION, $(grep '^schemathesis==' "$REQUIREMENTS"))"
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$REQUIREMENTS"
  { cat "$REQUIREMENTS"; echo "$PYTHON_VERSION"; } >"$VENV/pinned"
fi

# The not-served list: `operationId<TAB>reason`, `#` comments and blank lines ignored.
excluded=()
while IFS= read -r line; do
  case "$line" in '#'* | '') continue ;; esac
  id=${line%%$'\t'*}
  reason=${line#*$'\t'}
  if [ "$id" = "$line" ] || [ -z "$id" ] || [ -z "$reason" ]; then
    echo "error: $NOT_SERVED: expected 'operationId<TAB>reason', got: $line" >&2
    exit 1
  fi
  excluded+=(--exclude-operation-id "$id")
done <"$NOT_SERVED"
operations=$("$VENV/bin/python" -c '
import json, sys
doc = json.load(open(sys.argv[1]))
print(sum(1 for item in doc["paths"].values() for op in item.values() if isinstance(op, dict) and "operationId" in op))
' "$FIXTURE")

echo "==> the fixture's stripper and the refused-valid list"
PYTHONDONTWRITEBYTECODE=1 "$VENV/bin/python" -m pytest -q -p no:cacheprovider \
  "$HERE/test_strip_openapi.py" "$HERE/test_refused_valid.py"

echo "==> building the emulator"
(cd "$ROOT" && cargo build --quiet --locked --bin gpucloud-operator)
WORK=$(mktemp -d)
# A private copy: a shared CARGO_TARGET_DIR may be rebuilt by someone else meanwhile.
cp "$TARGET/debug/gpucloud-operator" "$WORK/gpucloud-operator"

KEY="v2c-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
# Quotas far above what the run sends: a 429 conforms too, but would stand in front of the
# handlers the run is here to reach.
"$WORK/gpucloud-operator" emulator --listen 127.0.0.1:0 --api-key "$KEY" \
  --v2-requests-per-minute 1000000 --v2-requests-per-hour 10000000 \
  --v2-requests-per-day 100000000 \
  >"$WORK/emulator.out" 2>"$WORK/emulator.err" &
PID=$!
cleanup() {
  kill "$PID" 2>/dev/null || true
  wait "$PID" 2>/dev/null || true
  if [ -n "${V2_CONFORMANCE_REPORT_DIR:-}" ] && [ -f "$WORK/junit.xml" ]; then
    mkdir -p "$V2_CONFORMANCE_REPORT_DIR"
    cp "$WORK/junit.xml" "$V2_CONFORMANCE_REPORT_DIR/"
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# The first line of its output names the address: "emulator listening on http://HOST:PORT".
URL=""
for _ in $(seq 1 200); do
  URL=$(head -n 1 "$WORK/emulator.out" | sed -n 's|^emulator listening on \(http://127\.0\.0\.1:[0-9][0-9]*\)$|\1|p')
  [ -n "$URL" ] && break
  if ! kill -0 "$PID" 2>/dev/null; then
    echo "emulator exited before listening" >&2
    cat "$WORK/emulator.err" >&2
    exit 1
  fi
  sleep 0.1
done
[ -n "$URL" ] || { echo "emulator did not start" >&2; exit 1; }
echo "==> emulator at $URL; schemathesis: $((operations - ${#excluded[@]} / 2)) of $operations operations, ${MAX_EXAMPLES} examples each, seed $SEED"

# The key reaches schemathesis through the environment (schemathesis.toml), never argv.
export V2_CONFORMANCE_API_KEY="$KEY"
# The check that lets the refusals listed in refused-valid.toml pass, and its tally.
export SCHEMATHESIS_HOOKS="$HERE/refused_valid.py"
export V2_CONFORMANCE_TALLY="$WORK/tally"
: >"$V2_CONFORMANCE_TALLY"
status=0
start=$SECONDS
(cd "$WORK" && "$VENV/bin/schemathesis" --config-file "$HERE/schemathesis.toml" run "$FIXTURE" \
  --url "$URL" \
  --mode all \
  --max-examples "$MAX_EXAMPLES" \
  --seed "$SEED" \
  --workers "$WORKERS" \
  --request-timeout 10 \
  --generation-database none \
  --report junit --report-junit-path "$WORK/junit.xml" \
  --no-color \
  "${excluded[@]}" "$@") >"$WORK/schemathesis.out" 2>&1 || status=$?
elapsed=$((SECONDS - start))

# schemathesis filters the Authorization header from its reproductions; this makes sure no
# other path lets the key through before anything is shown.
if grep -qF "$KEY" "$WORK/schemathesis.out" "$WORK/junit.xml" 2>/dev/null; then
  sed "s/$KEY/[KEY]/g" "$WORK/schemathesis.out"
  echo "error: the API key appeared in schemathesis' output (masked above)" >&2
  exit 1
fi
cat "$WORK/schemathesis.out"
echo
if [ -f "$WORK/junit.xml" ]; then
  "$VENV/bin/python" "$HERE/summarize-junit.py" "$WORK/junit.xml" "$V2_CONFORMANCE_TALLY"
fi
echo "schemathesis exited $status after ${elapsed}s"
exit "$status"
