#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Slow and idle clients cannot take the API down: with more slow sockets
# open than max-connections (each trickling a header line, never finishing
# its headers) a new client still gets /healthz answered, and the slow ones
# are closed by header-timeout-s; silent ones and idle keep-alive ones by the
# header and idle timeouts; connections over per-ip-connections are refused,
# and the server's complaints about them are rate-limited in the log.
# Small limits keep it quick; nothing here measures time.
. "$(dirname "$0")/lib.sh"
trap '' PIPE # writes to a socket the server closed fail instead of killing the test

# open_sockets N: N connections to the daemon, their fds in SOCKS.
open_sockets() {
  SOCKS=()
  local fd
  for _ in $(seq "$1"); do
    exec {fd}<>"/dev/tcp/127.0.0.1/$PORT"
    SOCKS+=("$fd")
  done
}

# is_closed FD: true when the server has closed that connection.
is_closed() {
  local line rc=0
  IFS= read -r -t 0.05 -u "$1" line || rc=$?
  # 0: a line came; 1: end of file (the server closed it); >128: nothing yet
  [ "$rc" -ne 0 ] && [ "$rc" -le 128 ]
}

count_open() {
  local n=0 fd
  for fd in "${SOCKS[@]}"; do is_closed "$fd" || n=$((n + 1)); done
  echo "$n"
}

close_sockets() {
  local fd
  for fd in "${SOCKS[@]}"; do exec {fd}>&-; done
  SOCKS=()
}

# 1. Trickling clients, more than the server takes at once.
start_daemon "$TMP/gpuaas.db" --max-connections 4 --header-timeout-s 1 --idle-timeout-s 30
open_sockets 12
for fd in "${SOCKS[@]}"; do printf 'GET /healthz HTTP/1.1\r\nHost: x\r\n' >&"$fd" 2>/dev/null || true; done
curl -sS --max-time 60 -o "$TMP/health" -w '%{http_code}' "$URL/healthz" >"$TMP/health.code" &
curl_pid=$!
deadline=$((SECONDS + 60))
# Keep trickling (well inside the idle timeout) until every slow socket is closed.
while [ "$(count_open)" -gt 0 ]; do
  [ $SECONDS -lt $deadline ] || fail "slow clients still open: $(count_open) of ${#SOCKS[@]}"
  for fd in "${SOCKS[@]}"; do printf 'X-Slow: 1\r\n' >&"$fd" 2>/dev/null || true; done
  sleep 0.2
done
wait "$curl_pid" || fail "curl for /healthz failed beside the slow clients"
expect_eq "$(cat "$TMP/health.code")" 200 "/healthz beside more slow clients than max-connections"
expect_contains "$(cat "$TMP/health")" '"ok"' "/healthz body"
grep -q 'msg="http server: closed connections whose request headers were late"' "$DAEMON_LOG" ||
  fail "no log line for the slow clients closed"
close_sockets

# 2. Silent clients (connected, nothing sent) are closed too, and the server still answers.
open_sockets 12
deadline=$((SECONDS + 60))
until [ "$(count_open)" = 0 ]; do
  [ $SECONDS -lt $deadline ] || fail "silent clients still open: $(count_open)"
  sleep 0.2
done
close_sockets
expect_eq "$(curl -sS --max-time 30 -o /dev/null -w '%{http_code}' "$URL/healthz")" 200 "/healthz after silent clients"
stop_daemon

# 3. An idle keep-alive connection is closed after idle-timeout-s.
start_daemon "$TMP/gpuaas.db" --idle-timeout-s 1 --header-timeout-s 0
open_sockets 1
printf 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n' >&"${SOCKS[0]}"
IFS= read -r -t 10 -u "${SOCKS[0]}" status_line || fail "no reply on the keep-alive connection"
expect_contains "$status_line" "200" "reply on the keep-alive connection"
deadline=$((SECONDS + 60))
until is_closed "${SOCKS[0]}"; do
  [ $SECONDS -lt $deadline ] || fail "idle keep-alive connection not closed"
done
close_sockets
stop_daemon

# 4. One address over per-ip-connections: refused, and the log says so a few times, not each time.
start_daemon "$TMP/gpuaas.db" --per-ip-connections 2 --header-timeout-s 1
open_sockets 40
sleep 0.5
close_sockets
expect_eq "$(curl -sS --max-time 30 --retry 20 --retry-all-errors --retry-delay 1 -o /dev/null \
  -w '%{http_code}' "$URL/healthz")" 200 "/healthz once the address is under its cap"
refused=$(grep -c 'msg="http server" detail="Server reached connection limit' "$DAEMON_LOG" || true)
[ "$refused" -ge 1 ] || fail "no log line for the refused connections"
[ "$refused" -le 5 ] || fail "$refused log lines for refused connections: not rate-limited"
stop_daemon
# The ones left out are counted when their window ends, or with the next line logged.
grep -qE 'suppressed=[0-9]+' "$DAEMON_LOG" || fail "the suppressed complaints were not counted"
echo "slow_clients: ok"
