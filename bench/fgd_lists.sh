#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# fgd-fill against FGD on every pod list: the shared ones and our own variants
# (bench/fgd_variants.py: gpu_spec on 10-33 % of the pods, 20-50 % multi-GPU
# pods, both, and a five-column file; and a second family, seed 23, named
# *-s23, that nothing was tuned on), issue 17. Prints one row per list:
# median unallocated GPU % at 95, 100 and 130 % arrived for each policy, and
# whether fgd-fill has fewer unallocated GPUs than FGD at each point.
#
# Usage: bench/fgd_lists.sh BUILD_DIR [SEEDS] [LIST...]
#   BUILD_DIR  a build tree with bench/fgd_bench (cmake --build BUILD_DIR --target fgd_bench)
#   SEEDS      seeds per list (default 10, as in docs/placement.md)
#   LIST       only these lists (names as printed: default, cpu050, gpuspec20, ...)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: fgd_lists.sh BUILD_DIR [SEEDS] [LIST...]}
seeds=${2:-10}
shift $(($# > 1 ? 2 : 1))
data=${GPUAAS_FGD_DATA:-$here/../../shared/data/alibaba-gpu-v2023}
bench=$build/bench/fgd_bench
[ -x "$bench" ] || { echo "fgd_lists: no $bench: build the fgd_bench target first" >&2; exit 1; }
[ -d "$data" ] || { echo "fgd_lists: no data folder $data (set GPUAAS_FGD_DATA)" >&2; exit 1; }
variants=$build/fgd-variants
python3 "$here/fgd_variants.py" --data "$data" --out "$variants" >/dev/null
# The second family: another seed and other fractions, for checking only (never tuned on).
python3 "$here/fgd_variants.py" --data "$data" --out "$variants" --seed 23 --spec 15,25 \
  --multi 25,40 --mix 15-25,25-40 --suffix=-s23 --no-short >/dev/null

lists=()
for f in "$data"/openb_pod_list_*.csv; do
  n=${f##*/openb_pod_list_}
  lists+=("${n%.csv}=$f")
done
for f in "$variants"/*.csv; do
  n=${f##*/}
  lists+=("${n%.csv}=$f")
done

# The three medians of a policy's row (its [min-max] and (paper) cells left out).
medians() {
  awk -v p="$1" '$1 == p && NF > 5 {
    n = 0
    for (i = 2; i <= NF && n < 3; i++) if ($i !~ /^[[(]/) { printf "%s ", $i; n++ }
    print ""; exit }'
}

printf '%-12s %-20s %-20s %s\n' list "fgd 95/100/130" "fgd-fill 95/100/130" "fill better at 95/100/130"
for entry in "${lists[@]}"; do
  name=${entry%%=*}
  file=${entry#*=}
  if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then
    continue
  fi
  out=$("$bench" --policies fgd,fgd-fill --seeds "$seeds" --pods "$file" "$data")
  read -r -a a <<<"$(medians fgd <<<"$out")"
  read -r -a b <<<"$(medians fgd-fill <<<"$out")"
  verdict=""
  for i in 0 1 2; do
    verdict+=$(awk -v x="${b[$i]}" -v y="${a[$i]}" 'BEGIN { print (x < y) ? "yes " : "NO  " }')
  done
  printf '%-12s %-20s %-20s %s\n' "$name" "${a[0]}/${a[1]}/${a[2]}" "${b[0]}/${b[1]}/${b[2]}" "$verdict"
done
