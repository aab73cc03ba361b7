#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what gpuaas needs to build, run and test, from Debian's packages
# (chromium, nodejs and npm: the dashboard's browser test, tests/browser;
# podman, runc, catatonit and busybox-static: containers run for real in
# e2e.local_podman; about 6 s of apt-get install on a clean machine;
# slurmdbd and mariadb-server, for slurm.backend.dbd_*: 27.5 MB, 8 s more;
# faketime: bench/reliability/crash_bench.py runs work in a month that has ended;
# openssl, jq, iproute2 and util-linux: tests/k8s makes its PKI and tokens,
# reads the API's JSON, finds free ports and starts daemons with setsid; its
# Go toolchain (1.26 or later, /usr/local/go) comes with the machine: Debian's
# golang is too old to build Kubernetes 1.36, so it is only checked here).
# Skips apt entirely when everything is already there, so reruns are fast.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git curl ca-certificates procps iproute2
  libmicrohttpd-dev libjansson-dev libsqlite3-dev libpq-dev libcurl4-openssl-dev
  libsodium-dev libcmocka-dev libyaml-dev
  clang libclang-rt-14-dev cppcheck
  postgresql wrk sqlite3 jq faketime openssl util-linux
  chromium nodejs
  slurm-wlm slurmdbd mariadb-server
  podman runc catatonit busybox-static
  python3 python3-venv
)
# Some nodejs builds bring npm themselves and conflict with Debian's npm package.
command -v npm >/dev/null 2>&1 || PACKAGES+=(npm)

# The outside-in tests (tests/outside) run pytest and schemathesis, pinned,
# from a virtual environment in .venv (about 40 MB; 30 s of pip on a clean
# machine). Recreated when a pin changes; nothing is fetched when it matches.
PY_PINS=(pytest==9.2.0 schemathesis==4.32.5)
python_tools() {
  local venv
  venv="$(cd "$(dirname "$0")/.." && pwd)/.venv"
  if [ -x "$venv/bin/python" ] &&
    [ "$("$venv/bin/python" -m pip freeze 2>/dev/null | grep -cxF -f <(printf '%s\n' "${PY_PINS[@]}"))" = "${#PY_PINS[@]}" ]; then
    return 0
  fi
  echo "gpuaas: installing ${PY_PINS[*]} into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "${PY_PINS[@]}"
}

# The Kubernetes test control plane (tests/k8s/build.sh) needs Go >= 1.26.
go_check() {
  local go=/usr/local/go/bin/go v
  [ -x "$go" ] || go=$(command -v go || true)
  v=$([ -n "$go" ] && "$go" env GOVERSION 2>/dev/null | sed -n 's/^go\([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
  read -r maj min <<<"${v:-0 0}"
  if [ "$maj" -lt 1 ] || { [ "$maj" -eq 1 ] && [ "$min" -lt 26 ]; }; then
    echo "gpuaas: no Go 1.26 or later (/usr/local/go/bin/go): tests/k8s cannot build its control plane" >&2
  fi
}
go_check

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  python_tools
  exit 0
fi
echo "gpuaas: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
python_tools
