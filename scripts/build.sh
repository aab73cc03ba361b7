#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds gpuaas into build/ (or $1), optionally with sanitizers (GPUAAS_SANITIZE=ON).
# A developer build: warnings are errors (GPUAAS_WERROR=OFF turns that off).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
type=${BUILD_TYPE:-RelWithDebInfo}
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" -DGPUAAS_SANITIZE="${GPUAAS_SANITIZE:-OFF}" \
  -DGPUAAS_WERROR="${GPUAAS_WERROR:-ON}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
