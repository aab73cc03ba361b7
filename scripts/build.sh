#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds gpuaas into build/ (or $1), optionally with sanitizers (GPUAAS_SANITIZE=ON).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
type=${BUILD_TYPE:-RelWithDebInfo}
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" -DGPUAAS_SANITIZE="${GPUAAS_SANITIZE:-OFF}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
