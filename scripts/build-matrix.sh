#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the tree the ways packagers and developers do, each into its own directory under
# build-matrix/ (or $1). A configuration fails when its build fails or its log shows any
# compiler warning; GPUAAS_WERROR=ON (the default) stops at the first one, GPUAAS_WERROR=OFF
# builds on (make -k) and lists them all.
#   release      CMAKE_BUILD_TYPE=Release (-O3: inlines more, warns more)
#   relwithdeb   CMAKE_BUILD_TYPE=RelWithDebInfo (what scripts/build.sh builds)
#   debug        CMAKE_BUILD_TYPE=Debug (-O0)
#   debian       CMAKE_BUILD_TYPE=None with CFLAGS/CPPFLAGS/LDFLAGS from
#                `dpkg-buildflags --export=sh` (hardening: -O2, format-security, relro, now)
#   clang        CC=clang-14, RelWithDebInfo
# Each log is <dir>/<name>.log. Prints one line per configuration and a closing
# "build-matrix: N passed, N failed"; exits non-zero when any failed. GPUAAS_MATRIX picks a
# subset (e.g. GPUAAS_MATRIX="release clang").
set -uo pipefail
cd "$(dirname "$0")/.."
root=${1:-build-matrix}
jobs=${JOBS:-$(nproc)}
configs=${GPUAAS_MATRIX:-release relwithdeb debug debian clang}
mkdir -p "$root"

deb_flags() { # CFLAGS|CPPFLAGS|LDFLAGS, with every hardening feature on
  DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get "$1"
}

build_one() { # name
  local name=$1 dir="$root/$1" type=Release cc=${CC:-cc}
  local -a env_vars=()
  case $name in
  release) type=Release ;;
  relwithdeb) type=RelWithDebInfo ;;
  debug) type=Debug ;;
  debian)
    # dpkg-buildflags' defaults for this machine's Debian (what debhelper's cmake step
    # exports); CMAKE_BUILD_TYPE=None adds nothing of its own, as debhelper does.
    command -v dpkg-buildflags >/dev/null || {
      echo "dpkg-buildflags not found" >&2
      return 1
    }
    type=None
    # CMake reads CFLAGS and LDFLAGS but not CPPFLAGS: debhelper passes CPPFLAGS inside
    # CFLAGS, and so does this.
    env_vars=("CFLAGS=$(deb_flags CFLAGS) $(deb_flags CPPFLAGS)" "LDFLAGS=$(deb_flags LDFLAGS)")
    ;;
  clang)
    cc=$(command -v clang-14 || command -v clang || true)
    [ -n "$cc" ] || {
      echo "clang not found" >&2
      return 1
    }
    type=RelWithDebInfo
    ;;
  *)
    echo "unknown configuration '$name'" >&2
    return 1
    ;;
  esac
  rm -rf "$dir"
  env "${env_vars[@]}" CC="$cc" cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" \
    -DGPUAAS_WERROR="${GPUAAS_WERROR:-ON}" &&
    cmake --build "$dir" -j"$jobs" -- -k
}

passed=0
failed=0
for name in $configs; do
  log="$root/$name.log"
  start=$SECONDS
  if build_one "$name" >"$log" 2>&1 && ! grep -q "warning:" "$log"; then
    echo "build-matrix: $name ok ($((SECONDS - start)) s)"
    passed=$((passed + 1))
  else
    echo "build-matrix: $name FAILED (see $log)"
    grep -E "(warning|error):" "$log" | sort -u | head -40
    failed=$((failed + 1))
  fi
done
echo "build-matrix: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
