#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Issue 14: slowloris. Target: /healthz answers within 1 s throughout.

For each mode, a fresh gpuaasd (release build, default settings, empty store)
on 127.0.0.1, and:
  - a prober that asks GET /healthz on a new connection every 0.5 s (timeout
    10 s) and records each answer's latency, from connect to the whole response;
  - after a few seconds of probing alone, N sockets (default 1,100: more than
    the default max-connections, 1,024) that
      trickle: send a request line and one header line, then one more header
               line every 10 s, never ending the request;
      silent:  connect and send nothing.
    A socket the server closes is opened again (as a slowloris attacker does),
    so N stay open or trying.
Prints per mode the probes' p50/p99/max latency, failures, the longest stretch
without an answer within the target, how many sockets the server closed, and
one PASS/FAIL line against the target; exit status 0 only when all modes pass.
Bounded: each mode lasts --seconds (default 60) plus a few seconds of set-up.

Usage: python3 bench/reliability/slowloris.py [--sockets 1100] [--seconds 60]
       [--modes trickle,silent] [--interval 10] [--target-ms 1000] [--no-build]
"""

import argparse
import errno
import os
import selectors
import socket
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ left in the work tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import Daemon, Workdir, log  # noqa: E402


class Prober(threading.Thread):
    """GET /healthz every `every` seconds on a fresh connection."""

    def __init__(self, port, every, timeout_s):
        super().__init__(daemon=True)
        self.port, self.every, self.timeout_s = port, every, timeout_s
        self.stop_ev = threading.Event()
        self.results = []  # (start, latency_s, ok, what)

    def probe(self):
        t0 = time.monotonic()
        try:
            with socket.create_connection((common.HOST, self.port), timeout=self.timeout_s) as s:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                data = b""
                while True:
                    left = self.timeout_s - (time.monotonic() - t0)
                    if left <= 0:
                        raise socket.timeout("timed out")
                    s.settimeout(left)
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
            ok = data.startswith(b"HTTP/1.1 200") and b'"ok"' in data
            what = "ok" if ok else "answer: " + data[:40].decode(errors="replace")
        except OSError as e:
            ok, what = False, type(e).__name__ + (f" {e.errno}" if e.errno else "")
        self.results.append((t0, time.monotonic() - t0, ok, what))

    def run(self):
        nxt = time.monotonic()
        while not self.stop_ev.is_set():
            self.probe()
            nxt += self.every
            delay = nxt - time.monotonic()
            if delay > 0:
                self.stop_ev.wait(delay)
            else:
                nxt = time.monotonic()


class Attack:
    """N sockets kept open (or connecting) to the daemon."""

    def __init__(self, port, n, mode):
        self.port, self.n, self.mode = port, n, mode
        self.sel = selectors.DefaultSelector()
        self.state = {}  # socket -> "connecting" | "open"
        self.server_closed = 0
        self.answered = 0  # closed with a response (e.g. 408 or 503) first
        self.connect_failed = 0
        self.n_header = 0

    def open_one(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        rc = s.connect_ex((common.HOST, self.port))
        if rc not in (0, errno.EINPROGRESS):
            s.close()
            self.connect_failed += 1
            return
        self.state[s] = "connecting"
        self.sel.register(s, selectors.EVENT_WRITE)

    def top_up(self):
        while len(self.state) < self.n:
            self.open_one()

    def drop(self, s, answered=False):
        self.sel.unregister(s)
        del self.state[s]
        s.close()
        self.server_closed += 1
        self.answered += answered

    def send(self, s, data):
        try:
            s.send(data)
        except OSError:
            self.drop(s)

    def on_connected(self, s):
        err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            self.sel.unregister(s)
            del self.state[s]
            s.close()
            self.connect_failed += 1
            return
        self.state[s] = "open"
        self.sel.modify(s, selectors.EVENT_READ)
        if self.mode == "trickle":
            self.send(s, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")

    def trickle(self):
        self.n_header += 1
        line = f"X-Slow-{self.n_header}: {self.n_header}\r\n".encode()
        for s, st in list(self.state.items()):
            if st == "open" and s in self.state:
                self.send(s, line)

    def poll(self, timeout_s):
        for key, mask in self.sel.select(timeout_s):
            s = key.fileobj
            if s not in self.state:
                continue
            if self.state[s] == "connecting":
                self.on_connected(s)
                continue
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            self.drop(s, answered=bool(data))

    def counts(self):
        n_open = sum(1 for st in self.state.values() if st == "open")
        return n_open, len(self.state) - n_open

    def close(self):
        for s in list(self.state):
            self.sel.unregister(s)
            s.close()
        self.state.clear()


def summarize(results, t_from, t_to, target_s):
    rs = [r for r in results if t_from <= r[0] < t_to]
    lat = sorted(r[1] for r in rs)
    bad = [r for r in rs if not r[2] or r[1] > target_s]
    fails = [r for r in rs if not r[2]]
    # longest run of consecutive probes that failed or were slower than the target
    longest, run_start, run_end = 0.0, None, None
    for t0, dt, ok, _ in rs:
        if ok and dt <= target_s:
            run_start = None
            continue
        if run_start is None:
            run_start = t0
        run_end = t0 + dt
        longest = max(longest, run_end - run_start)
    kinds = {}
    for r in fails:
        kinds[r[3]] = kinds.get(r[3], 0) + 1
    return {"n": len(rs), "p50": common.percentile(lat, 50), "p99": common.percentile(lat, 99),
            "max": lat[-1] if lat else float("nan"), "bad": len(bad), "fails": len(fails),
            "kinds": kinds, "longest": longest}


def run_mode(wd, gpuaasd, mode, a):
    d = Daemon(wd, gpuaasd, os.path.join(wd.path, f"{mode}.db"))
    d.start()
    prober = Prober(d.port, a.probe_every, a.probe_timeout)
    prober.start()
    time.sleep(a.baseline_s)
    t_attack = time.monotonic()
    attack = Attack(d.port, a.sockets, mode)
    next_trickle = t_attack + a.interval
    next_report = t_attack
    peak_open = 0
    try:
        while time.monotonic() - t_attack < a.seconds:
            if not a.no_reopen or time.monotonic() - t_attack < 1:
                attack.top_up()
            attack.poll(0.05)
            now = time.monotonic()
            n_open, n_conn = attack.counts()
            peak_open = max(peak_open, n_open)
            if mode == "trickle" and now >= next_trickle:
                attack.trickle()
                next_trickle += a.interval
            if now >= next_report:
                recent = [r for r in prober.results if r[0] >= next_report - a.report_every]
                worst = (f"worst {max(r[1] for r in recent) * 1000:.0f} ms" if recent
                         else "no probe finished")
                log(f"  {mode} t={now - t_attack:4.0f} s: {n_open} connected, {n_conn} "
                    f"connecting, {attack.server_closed} closed by the server so far; /healthz "
                    f"in the last {a.report_every:.0f} s: {worst}, "
                    f"{sum(1 for r in recent if not r[2])} failed")
                next_report += a.report_every
    finally:
        t_end = time.monotonic()
        attack.close()
    # after the attack: the daemon must still answer
    time.sleep(1.0)
    prober.stop_ev.set()
    prober.join(a.probe_timeout + 5)
    after = summarize(prober.results, t_end + 0.5, float("inf"), a.target_s)
    alive = d.alive()
    base = summarize(prober.results, 0, t_attack, a.target_s)
    att = summarize(prober.results, t_attack, t_end, a.target_s)
    d.stop()
    ok = alive and att["n"] > 0 and att["bad"] == 0 and after["fails"] == 0
    log(f"{mode}: {a.sockets} sockets for {t_end - t_attack:.0f} s (peak {peak_open} connected at once, "
        f"{attack.server_closed} closed by the server, {attack.answered} of them with an answer, "
        f"{attack.connect_failed} connects failed); before: /healthz p99 "
        f"{base['p99'] * 1000:.0f} ms over {base['n']} probes; during: {att['n']} probes, p50 "
        f"{att['p50'] * 1000:.1f} ms, p99 {att['p99'] * 1000:.1f} ms, max {att['max'] * 1000:.1f} ms, "
        f"{att['fails']} failed{' ' + str(att['kinds']) if att['kinds'] else ''}, {att['bad']} over {a.target_ms} ms, longest "
        f"stretch without an answer within {a.target_ms} ms {att['longest']:.1f} s; after: "
        f"{'answers' if after['fails'] == 0 and after['n'] else 'DOES NOT ANSWER'}"
        f"{'' if alive else '; gpuaasd DIED'}")
    slow = [r for r in prober.results if t_attack <= r[0] < t_end and (not r[2] or r[1] > a.target_s)]
    if slow:
        log(f"  {mode}: probes not answered within {a.target_ms} ms (start after the attack began, "
            f"latency, outcome): " + ", ".join(
                f"{r[0] - t_attack:.1f} s {r[1]:.1f} s {r[3]}" for r in slow[:12]))
    log(f"{'PASS' if ok else 'FAIL'}: slowloris {mode}, {a.sockets} sockets, {a.seconds:.0f} s: "
        f"/healthz max {att['max'] * 1000:.1f} ms, {att['fails']} failures "
        f"(target: every answer within {a.target_ms} ms)")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sockets", type=int, default=1100)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--modes", default="trickle,silent")
    ap.add_argument("--interval", type=float, default=10, help="trickle: seconds between header lines")
    ap.add_argument("--probe-every", type=float, default=0.5)
    ap.add_argument("--probe-timeout", type=float, default=10)
    ap.add_argument("--baseline-s", type=float, default=3)
    ap.add_argument("--report-every", type=float, default=10)
    ap.add_argument("--target-ms", type=int, default=1000)
    ap.add_argument("--no-reopen", action="store_true",
                    help="do not open again the sockets the server closes")
    ap.add_argument("--build", default=os.environ.get("BENCH_BUILD", os.path.join(common.ROOT, "build")))
    ap.add_argument("--no-build", action="store_true")
    a = ap.parse_args()
    a.target_s = a.target_ms / 1000.0
    modes = [m for m in a.modes.split(",") if m]
    if any(m not in ("trickle", "silent") for m in modes):
        sys.exit("--modes: trickle and/or silent")
    if not a.no_build:
        common.build(a.build)
    limit = common.raise_fd_limit(a.sockets + 1024)
    log(f"slowloris: {common.machine()}, commit {common.commit()}, open-file limit {limit} "
        f"(this script and gpuaasd), modes {','.join(modes)}")
    with Workdir("gpuaas-slowloris.") as wd:
        gpuaasd = os.path.join(a.build, "src", "gpuaasd")
        results = [run_mode(wd, gpuaasd, m, a) for m in modes]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
