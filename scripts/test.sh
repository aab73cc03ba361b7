#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The second command of the README: install, build, and run every test twice:
# once in a normal build and once under AddressSanitizer + UBSan. Tests that
# need PostgreSQL start a throwaway server on 127.0.0.1 themselves.
# Then runs the fuzz harnesses briefly (scripts/fuzz.sh, GPUAAS_FUZZ_SECONDS
# each, default 10). Prints each summary and a closing "N passed, N failed" line.
# Builds the Kubernetes test control plane (tests/k8s/build.sh) first.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh || exit 1

jobs=$(nproc)
passed=0
failed=0
status=0

run_suite() { # name build-dir sanitize
  local name=$1 dir=$2 san=$3 log
  echo "== $name: build"
  if ! GPUAAS_SANITIZE=$san BUILD_TYPE=$4 bash scripts/build.sh "$dir" >"$dir.build.log" 2>&1; then
    tail -50 "$dir.build.log"
    echo "$name: build failed"
    failed=$((failed + 1))
    status=1
    return
  fi
  echo "== $name: test"
  log="$dir/ctest.log"
  (cd "$dir" && ctest --output-on-failure -j"$jobs" --timeout 900) 2>&1 | tee "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  # schemathesis' summary per role (ctest shows a passing test's output only in its log)
  grep -aE "^==== schemathesis|^  [0-9]+ generated|^schemathesis: " \
    "$dir/Testing/Temporary/LastTest.log" 2>/dev/null || true
  local line total nfail
  line=$(grep -E "tests passed, [0-9]+ tests failed out of [0-9]+" "$log" | tail -1)
  total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$line")
  nfail=$(sed -E 's/.* ([0-9]+) tests failed.*/\1/' <<<"$line")
  if [ -z "$line" ]; then
    failed=$((failed + 1))
    status=1
  else
    passed=$((passed + total - nfail))
    failed=$((failed + nfail))
  fi
}

# The Kubernetes test control plane (tests/k8s, docs/kubernetes-backend.md):
# built once per machine into a cache outside the checkout (a cold build is
# the long step: see the doc), seconds when cached. A failed build is not
# counted here: k8s.control_plane fails in each suite, saying why.
echo "== k8s control plane: build"
k8s_start=$(date +%s)
if bash tests/k8s/build.sh; then
  echo "k8s control plane: ready in $(($(date +%s) - k8s_start)) s"
else
  echo "k8s control plane: build failed after $(($(date +%s) - k8s_start)) s"
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p build build-asan
run_suite "release" build OFF RelWithDebInfo
run_suite "asan+ubsan" build-asan ON Debug
# A short libFuzzer run of the Prometheus and CSV parsers and the request path (scripts/fuzz.sh);
# each harness counts as one test.
echo "== fuzz"
fuzz_out=$(bash scripts/fuzz.sh "${GPUAAS_FUZZ_SECONDS:-10}" 2>&1)
echo "$fuzz_out"
line=$(grep -E "^fuzz: [0-9]+ passed, [0-9]+ failed" <<<"$fuzz_out" | tail -1)
if [ -z "$line" ]; then
  failed=$((failed + 1))
  status=1
else
  passed=$((passed + $(sed -E 's/^fuzz: ([0-9]+) passed.*/\1/' <<<"$line")))
  nfail=$(sed -E 's/.* ([0-9]+) failed$/\1/' <<<"$line")
  failed=$((failed + nfail))
  [ "$nfail" -eq 0 ] || status=1
fi
echo "$passed passed, $failed failed"
exit $status
