#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer harnesses (tests/fuzz: prom, csv, and request: one HTTP
# request through the API server in-process) with clang into build-fuzz/
# and runs each for N seconds (first argument, default 30), seeded from
# tests/fuzz/corpus/<name>, the test fixtures and the shared telemetry data.
# New corpus entries and crash files stay in build-fuzz/. Prints one line
# per harness and a closing "fuzz: N passed, N failed"; exits non-zero on
# any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
dir=${GPUAAS_FUZZ_DIR:-build-fuzz}
cc=$(command -v clang-14 || command -v clang || true)
if [ -z "$cc" ]; then
  echo "fuzz: clang not found (scripts/deps.sh installs it)"
  echo "fuzz: 0 passed, 1 failed"
  exit 1
fi
if ! { cmake -S . -B "$dir" -DCMAKE_C_COMPILER="$cc" -DGPUAAS_FUZZ=ON -DGPUAAS_WERROR=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$dir.build.log" 2>&1 &&
  cmake --build "$dir" -j2 --target fuzz_prom fuzz_csv fuzz_request >>"$dir.build.log" 2>&1; }; then
  tail -30 "$dir.build.log"
  echo "fuzz: build failed"
  echo "fuzz: 0 passed, 1 failed"
  exit 1
fi

passed=0
failed=0
for name in prom csv request; do
  work="$dir/corpus-$name"
  mkdir -p "$work" "$dir/artifacts-$name"
  seeds=(tests/fuzz/corpus/"$name")
  [ "$name" = request ] || seeds+=(tests/inventory/fixtures)
  [ "$name" = prom ] && [ -d ../shared/data/telemetry ] && seeds+=(../shared/data/telemetry)
  log="$dir/fuzz-$name.log"
  # The request harness's server threads keep memory between inputs, so
  # libFuzzer's per-input leak check would scan the heap after nearly every
  # run; leaks are found by fuzz.replay_request under ASan, which checks at exit.
  extra=()
  [ "$name" = request ] && extra+=(-detect_leaks=0)
  if "$dir/tests/fuzz/fuzz_$name" "${extra[@]}" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -max_len=65536 -artifact_prefix="$dir/artifacts-$name/" "$work" "${seeds[@]}" >"$log" 2>&1; then
    echo "fuzz $name: ok ($(grep -Eo 'stat::number_of_executed_units: [0-9]+' "$log" |
      grep -Eo '[0-9]+' || echo '?') runs in ${secs}s)"
    passed=$((passed + 1))
  else
    echo "fuzz $name: FAILED (see $log)"
    grep -E "ERROR|SUMMARY|artifact" "$log" | head -5
    failed=$((failed + 1))
  fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
