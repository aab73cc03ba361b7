#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Crash safety: SIGKILL the daemon in the middle of a burst of concurrent
# writes, restart it, and check that every write it acknowledged is there,
# that every change has exactly its audit entry (nothing half-written), and
# that the SQLite file is intact.
. "$(dirname "$0")/lib.sh"

start_daemon
api POST /v1/organizations "$ADMIN_TOKEN" '{"name":"crash"}'
expect_eq "$HTTP_STATUS" 201 "create org"
org=$(jq -r .id <<<"$BODY")

writer() { # id: creates projects until the daemon dies, logging acknowledged names
  local w=$1 i=0 code
  while :; do
    code=$(curl -sS -o /dev/null -w "%{http_code}" -X POST \
      -H "Authorization: Bearer $ADMIN_TOKEN" -H "Content-Type: application/json" \
      --data "{\"org_id\":$org,\"name\":\"w$w-$i\"}" "$URL/v1/projects" 2>/dev/null) || break
    [ "$code" = 201 ] && echo "w$w-$i" >>"$TMP/acked.$w"
    [ "$code" = 000 ] && break
    i=$((i + 1))
  done
}
for w in 1 2 3 4; do writer $w & done
# Let the burst run until a good number of writes landed, then kill mid-stream.
for _ in $(seq 200); do
  n=$( (cat "$TMP"/acked.* 2>/dev/null || true) | wc -l)
  [ "$n" -ge 300 ] && break
  sleep 0.05
done
kill_daemon
wait
acked=$(cat "$TMP"/acked.* | sort)
n_acked=$(wc -l <<<"$acked")
[ "$n_acked" -ge 50 ] || fail "burst too small to mean anything ($n_acked writes)"

[ "$(sqlite3 "$TMP/gpuaas.db" 'PRAGMA integrity_check;')" = ok ] || fail "integrity_check"
start_daemon "$TMP/gpuaas.db"
after=""
next=0
while :; do
  api GET "/v1/projects?org_id=$org&limit=1000&after=$next" "$ADMIN_TOKEN"
  expect_eq "$HTTP_STATUS" 200 "list projects after restart"
  page=$BODY
  after+=$(jq -r '.items[].name' <<<"$page")$'\n'
  next=$(jq -r '.next_after' <<<"$page")
  [ "$next" = null ] && break
done
stored=$(grep -v '^$' <<<"$after" | sort)
missing=$(comm -23 <(echo "$acked") <(echo "$stored"))
[ -z "$missing" ] || fail "acknowledged writes lost after SIGKILL: $(head -5 <<<"$missing")"

# Each stored project has exactly one 'create' audit entry, and no audit entry
# names a project that is not stored: the change and its audit commit together.
n_projects=$(sqlite3 "$TMP/gpuaas.db" "SELECT count(*) FROM projects;")
n_audit=$(sqlite3 "$TMP/gpuaas.db" \
  "SELECT count(*) FROM audit WHERE resource='projects' AND action='create';")
expect_eq "$n_audit" "$n_projects" "audit entries vs projects"
orphans=$(sqlite3 "$TMP/gpuaas.db" "SELECT count(*) FROM audit a WHERE resource='projects' \
  AND NOT EXISTS (SELECT 1 FROM projects p WHERE p.id = a.object_id);")
expect_eq "$orphans" 0 "audit entries without their project"
stop_daemon
echo "crash: ok ($n_acked acknowledged writes, $n_projects stored)"
