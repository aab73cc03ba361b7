#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# with-pg-url.sh URL_FILE COMMAND...: runs COMMAND with GPUAAS_TEST_STORE_URL
# set to the URL pg-start.sh wrote, and fails loudly when there is none.
set -euo pipefail

url_file=${1:?usage: with-pg-url.sh URL_FILE COMMAND...}
shift
if [ ! -s "$url_file" ]; then
    echo "with-pg-url.sh: no PostgreSQL test server ($url_file is missing); see the output of store.postgres.start" >&2
    exit 1
fi
GPUAAS_TEST_STORE_URL=$(cat "$url_file")
export GPUAAS_TEST_STORE_URL
exec "$@"
