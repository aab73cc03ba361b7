# SPDX-License-Identifier: Apache-2.0
# Sourced by build.sh and build-kueue.sh: builds one Go main package from a
# wrapper module into a staging directory, timing it. Needs goenv.sh sourced
# and a fail function. The caller's label names its builds in messages.
#
#   go_build_one LABEL NAME MODULE_DIR PACKAGE LDFLAGS OUT_DIR
# Sets BUILT_SECS and BUILT_RSS_MIB; on failure calls fail with Go's first
# line of reason and the log's path.
go_build_one() {
    local label=$1 name=$2 dir=$3 pkg=$4 flags=$5 out=$6
    local log=$GPUAAS_K8S_CACHE/logs/build-$name.log start why rss
    start=$(date +%s)
    echo "$label: building $name ($pkg) ..." >&2
    if ! (cd "$dir" && GOFLAGS="$GOFLAGS -mod=readonly" \
        /usr/bin/time -v -o "$log.time" nice -n 19 "$GO" build -o "$out/$name" \
        -ldflags "$flags" "$pkg") >"$log" 2>&1; then
        # The first line that is not progress: Go's own reason.
        why=$(grep -vE '^go: downloading|^[[:space:]]*$' "$log" | head -n1)
        [ -n "$why" ] || why=$(grep -m1 -E 'signal|status' "$log.time")
        fail "$name: ${why:-no reason given} (log: $log)"
    fi
    BUILT_SECS=$(($(date +%s) - start))
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$log.time")
    BUILT_RSS_MIB=$((rss / 1024))
    echo "$label: built $name in ${BUILT_SECS}s (peak RSS $BUILT_RSS_MIB MiB)" >&2
}
