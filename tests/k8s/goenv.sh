# SPDX-License-Identifier: Apache-2.0
# Sourced by the tests/k8s scripts: Go toolchain and the per-machine cache
# that keeps modules, build cache and built binaries outside the checkout, so
# a second build on the same machine takes seconds.
GO=${GO:-/usr/local/go/bin/go}
[ -x "$GO" ] || GO=$(command -v go || echo /usr/local/go/bin/go)
GPUAAS_K8S_CACHE=${GPUAAS_K8S_CACHE:-/var/cache/gpuaas-k8s}
export GOMODCACHE=$GPUAAS_K8S_CACHE/gomod
export GOCACHE=$GPUAAS_K8S_CACHE/gocache
export GOPATH=$GPUAAS_K8S_CACHE/gopath
export GOTOOLCHAIN=local
export GOFLAGS=-buildvcs=false
export CGO_ENABLED=0
