#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Issue 14: SIGKILL during submission bursts.

Set-up: gpuaasd (release build) on a fresh SQLite store with a simulated fleet;
two organizations run work in the previous calendar month and get it invoiced.
The API has no way to put usage into a month that has ended (usage is metered
from the daemon's clock as simulated work runs), so the first daemon runs under
faketime with its clock set to the 10th of last month: it meters that work
itself. Then it is stopped and started on the real clock, each month is issued
(one EUR and one USD invoice) and one gets a credit note; their exports (JSON,
CSV, HTML) are kept.

Then, each round: N clients (default 32, one keep-alive connection each) submit
workloads as fast as they can, each with its own idempotency key and name,
recording every acknowledgement (201/200 and the id). At a random moment of the
burst the daemon gets SIGKILL. It is started again and must show:
  - every acknowledged submission exactly once, with the acknowledged id
    (the round's workloads listed by id) and the same key and name;
  - no workload twice, none the clients never sent;
  - a sample of acknowledged keys found by GET ?idempotency_key= and, posted
    again, answered 200 with the same id; every request that was in flight at
    the kill, posted again, is answered 200 (it was stored) or 201 (it was not);
  - GET /v1/ledger/verify ok (the burst's work runs and ends on the simulated
    fleet while submissions pour in, so the ledger is written during the kill);
  - every issued invoice's exports byte-identical, /verify reproduced.
One line per round, a tally at the end; exit status 0 only when every round passed.
Runs until --rounds are done or --max-minutes have passed, whichever comes first.

Usage: python3 bench/reliability/crash_bench.py [--rounds 100] [--clients 32]
       [--max-kill-s 2.0] [--max-minutes 45] [--seed N] [--build DIR] [--no-build]
"""

import argparse
import datetime
import http.client
import json
import os
import random
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ left in the work tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import Api, Daemon, Workdir, log  # noqa: E402

FLEET = {"nodes": [{"name": "gpu", "cpu_milli": 64000, "memory_mib": 524288, "gpus": 8,
                    "model": "H100", "count": 32}]}
EXPORTS = ("json", "csv", "html")
LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"


def last_month(now):
    first = now.replace(day=1)
    prev = first - datetime.timedelta(days=1)
    return prev.strftime("%Y-%m")


def wait_until(what, pred, timeout_s):
    deadline = time.monotonic() + timeout_s
    while not pred():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.1)


def one(api, path):
    items = api.call("GET", path)["items"]
    if len(items) != 1:
        raise RuntimeError(f"GET {path}: expected one item, got {len(items)}")
    return items[0]


def create_tenants(api):
    """Orgs, projects, a pool over the simulated fleet, quotas, two flavors with
    prices in two currencies. Returns the ids the rest needs."""
    cluster = one(api, "/v1/clusters?name=sim")["id"]
    h100 = one(api, "/v1/gpu-classes?name=h100")["id"]
    ids = {}
    for org, project in (("acme", "train"), ("globex", "infer"), ("crash", "burst")):
        created = api.call("POST", "/v1/organizations", {"name": org})
        o = ids[org] = created["id"]
        # the daemon's own (faked) clock: a price may start now or later, never in the past
        since = created["created_at"]
        ids[project] = api.call("POST", "/v1/projects", {"org_id": o, "name": project})["id"]
        api.call("POST", "/v1/quotas", {"project_id": ids[project], "gpu_class_id": h100,
                                        "limit_milli": 256000})
    api.call("POST", "/v1/pools", {
        "name": "fleet", "owner_project_id": ids["train"], "cluster_id": cluster,
        "cost_per_gpu_hour_micros": 2000000, "currency": "EUR",
        "access_org_ids": [ids["acme"], ids["globex"], ids["crash"]]})
    for name, milli, cur, price in (("h100.1x", 1000, "EUR", 3600000000),
                                    ("h100.4x", 4000, "USD", 7200000000)):
        f = api.call("POST", "/v1/flavors", {
            "name": name, "gpu_class_id": h100, "gpu_milli": milli, "vcpus": 4 * milli // 1000,
            "memory_mib": 16384 * milli // 1000, "price_per_hour_micros": 1,
            "currency": cur})["id"]
        ids[name] = f
        api.call("POST", "/v1/prices", {"flavor_id": f, "currency": cur,
                                        "price_per_hour_micros": price,
                                        "effective_from": since})
    return ids


def run_last_month_work(api, ids):
    """A little owned and opportunistic work of acme and globex; waits until it ended."""
    subs = [(ids["train"], ids["h100.1x"], "owned", 1, 3),
            (ids["train"], ids["h100.1x"], "opportunistic", 2, 2),
            (ids["infer"], ids["h100.4x"], "opportunistic", 2, 4),
            (ids["infer"], ids["h100.4x"], "opportunistic", 1, 1)]
    wids = [api.call("POST", "/v1/workloads", {
        "project_id": p, "flavor_id": f, "priority_class": c, "replicas": r,
        "duration_s": d, "name": f"last-month-{i}"})["id"] for i, (p, f, c, r, d) in enumerate(subs)]

    def all_done():
        return all(api.call("GET", f"/v1/workloads/{w}")["state"] == "succeeded" for w in wids)
    wait_until("last month's work to succeed", all_done, 60)


def issue_invoices(api, ids, period):
    """Issues the month for acme and globex, credits part of acme's; returns the
    ids of every document issued."""
    docs = []
    for org in ("acme", "globex"):
        items = api.call("POST", "/v1/invoices/issue", {"org_id": ids[org], "period": period},
                         expect=(201,))["items"]
        docs += [inv["id"] for inv in items]
    note = api.call("POST", f"/v1/invoices/{docs[0]}/credit",
                    {"reason": "goodwill: crash bench", "amount_micros": 1000000}, expect=(201,))
    docs.append(note["id"])
    return docs


def invoice_bodies(api, docs):
    """Every export of every document, and the list of invoices, as bytes."""
    bodies = {}
    for d in docs:
        for fmt in EXPORTS:
            status, data = api.raw("GET", f"/v1/invoices/{d}/export?format={fmt}")
            bodies[(d, fmt)] = (status, data)
    status, data = api.raw("GET", "/v1/invoices?limit=1000")
    bodies[("list", "json")] = (status, data)
    return bodies


class Client(threading.Thread):
    """Submits until stopped or the connection dies; records what happened to each key."""

    def __init__(self, port, token, body, prefix, stop, killed):
        super().__init__(daemon=True)
        self.port, self.token, self.body, self.prefix = port, token, body, prefix
        self.stop_ev, self.killed = stop, killed
        self.acked = {}  # key -> (status, id)
        self.in_flight = []  # keys sent without an answer (the kill, or an error)
        self.refused = {}  # status -> count
        self.errors_before_kill = 0
        self.sent = []

    def run(self):
        headers = {"Authorization": "Bearer " + self.token, "Content-Type": "application/json"}
        conn = http.client.HTTPConnection(common.HOST, self.port, timeout=15)
        i = 0
        while not self.stop_ev.is_set():
            key = f"{self.prefix}-{i}"
            i += 1
            body = dict(self.body, idempotency_key=key, name=key)
            self.sent.append(key)
            try:
                conn.request("POST", "/v1/workloads", body=json.dumps(body), headers=headers)
                resp = conn.getresponse()
                data = resp.read()
            except (OSError, http.client.HTTPException):
                self.in_flight.append(key)
                conn.close()
                if self.killed.is_set():
                    return
                self.errors_before_kill += 1
                conn = http.client.HTTPConnection(common.HOST, self.port, timeout=15)
                continue
            if resp.status in (200, 201):
                self.acked[key] = (resp.status, json.loads(data)["id"])
            else:
                self.refused[resp.status] = self.refused.get(resp.status, 0) + 1
        conn.close()


def burst(daemon, token, body, rnd, n_clients, kill_after_s):
    stop, killed = threading.Event(), threading.Event()
    clients = [Client(daemon.port, token, body, f"r{rnd}-c{c}", stop, killed)
               for c in range(n_clients)]
    for c in clients:
        c.start()
    time.sleep(kill_after_s)
    killed.set()
    daemon.sigkill()
    stop.set()
    for c in clients:
        c.join(30)
        if c.is_alive():
            raise RuntimeError("a client did not stop within 30 s of the kill")
    return clients


def check_round(api, project, base_id, clients, bodies, docs, rng, n_sample):
    """Compares the store after the restart with what the clients saw. Returns
    (problems, stats, highest id of the round)."""
    problems, st = [], {}
    acked, in_flight, sent = {}, set(), set()
    for c in clients:
        acked.update(c.acked)
        in_flight.update(c.in_flight)
        sent.update(c.sent)
    rows = api.list_all(f"/v1/workloads?project_id={project}", after=base_id)
    by_key = {}
    for w in rows:
        by_key.setdefault(w["idempotency_key"], []).append(w)
    dups = [k for k, ws in by_key.items() if len(ws) > 1]
    phantom = [k for k in by_key if k not in sent]
    lost = [k for k in acked if k not in by_key]
    wrong = [k for k, (_, wid) in acked.items()
             if k in by_key and (by_key[k][0]["id"] != wid or by_key[k][0]["name"] != k)]
    for what, keys in (("lost", lost), ("duplicated", dups), ("never sent", phantom),
                       ("stored with another id or name", wrong)):
        if keys:
            problems.append(f"{len(keys)} {what}: {sorted(keys)[:5]}")
    st.update(acked=len(acked), in_flight=len(in_flight), stored=len(rows),
              lost=len(lost), dup=len(dups), phantom=len(phantom), wrong=len(wrong))
    st["in_flight_stored"] = sum(1 for k in in_flight if k in by_key)

    sample = rng.sample(sorted(acked), min(n_sample, len(acked)))
    body = clients[0].body
    for k in sample:
        found = api.call("GET", f"/v1/workloads?project_id={project}&idempotency_key={k}")["items"]
        if [w["id"] for w in found] != [acked[k][1]]:
            problems.append(f"key {k}: GET by key gives {[w['id'] for w in found]}, acked "
                            f"{acked[k][1]}")
        status, data = api.raw("POST", "/v1/workloads", dict(body, idempotency_key=k, name=k))
        if status != 200 or json.loads(data)["id"] != acked[k][1]:
            problems.append(f"key {k}: replay gives {status} {data[:120]!r}, acked {acked[k][1]}")
    for k in sorted(in_flight):
        status, data = api.raw("POST", "/v1/workloads", dict(body, idempotency_key=k, name=k))
        want = 200 if k in by_key else 201
        if status != want or (want == 200 and json.loads(data)["id"] != by_key[k][0]["id"]):
            problems.append(f"in-flight key {k}: replay gives {status}, expected {want}")
        elif want == 201:
            acked[k] = (201, json.loads(data)["id"])
    st["replayed"] = len(sample) + len(in_flight)

    ledger = api.call("GET", "/v1/ledger/verify")
    st["ledger_records"] = ledger.get("records")
    if ledger.get("ok") is not True:
        # Asked again: a second answer of ok, with the chain grown, means the first
        # read raced with records being appended, not that the chain is broken.
        time.sleep(1.0)
        again = api.call("GET", "/v1/ledger/verify")
        problems.append(f"ledger verify: {ledger}; asked again 1 s later: ok={again.get('ok')} "
                        f"records={again.get('records')} problem={again.get('problem')!r}")
    now = invoice_bodies(api, docs)
    changed = [f"{d}.{fmt}" for (d, fmt), v in bodies.items() if now.get((d, fmt)) != v]
    if changed:
        problems.append(f"invoice bodies changed: {changed}")
    for d in docs:
        v = api.call("GET", f"/v1/invoices/{d}/verify")
        if v.get("reproduced") is not True:
            problems.append(f"invoice {d} verify: {v}")
    high = max([base_id] + [w["id"] for w in rows] + [wid for _, wid in acked.values()])
    return problems, st, acked, high


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--min-kill-s", type=float, default=0.05,
                    help="the kill comes between this and --max-kill-s after the burst starts")
    ap.add_argument("--max-kill-s", type=float, default=2.0)
    ap.add_argument("--max-minutes", type=float, default=45.0,
                    help="stop starting rounds after this long (the set-up included)")
    ap.add_argument("--sample", type=int, default=100,
                    help="acknowledged keys per round also looked up by key and replayed")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--build", default=os.environ.get("BENCH_BUILD", os.path.join(common.ROOT, "build")))
    ap.add_argument("--no-build", action="store_true")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 31)
    rng = random.Random(seed)
    t_start = time.monotonic()
    deadline = t_start + a.max_minutes * 60
    if not a.no_build:
        common.build(a.build)
    if not os.path.exists(LIBFAKETIME):
        sys.exit(f"{LIBFAKETIME} is missing: run 'bash scripts/deps.sh' (Debian package faketime)")
    common.raise_fd_limit(4096)
    gpuaasd = os.path.join(a.build, "src", "gpuaasd")
    now = datetime.datetime.now(datetime.timezone.utc)
    period = last_month(now)
    log(f"crash bench: {common.machine()}, commit {common.commit()}, {a.rounds} rounds of "
        f"{a.clients} clients, kill at {a.min_kill_s}..{a.max_kill_s} s, seed {seed}, "
        f"invoiced month {period}")

    with Workdir("gpuaas-crash.") as wd:
        fleet = os.path.join(wd.path, "fleet.json")
        with open(fleet, "w") as f:
            json.dump(FLEET, f)
        d = Daemon(wd, gpuaasd, os.path.join(wd.path, "gpuaas.db"), ["--sim-fleet", fleet])
        # libfaketime preloaded straight into gpuaasd (the faketime program would
        # sit in between as the parent and take the signals).
        fake = ["env", "TZ=UTC", "LD_PRELOAD=" + LIBFAKETIME, "FAKETIME_DONT_FAKE_MONOTONIC=1",
                f"FAKETIME=@{period}-10 08:00:00"]
        d.start(prefix=fake)
        token = d.token()
        api = Api(d.port, token)
        ids = create_tenants(api)
        run_last_month_work(api, ids)
        api.close()
        if d.stop() != 0:
            raise RuntimeError("gpuaasd did not stop cleanly:\n" + d.log_tail())

        d.start()
        api = Api(d.port, token)
        docs = issue_invoices(api, ids, period)
        bodies = invoice_bodies(api, docs)
        if any(status != 200 for status, _ in bodies.values()):
            raise RuntimeError(f"an export failed: {[(k, s) for k, (s, _) in bodies.items() if s != 200]}")
        log(f"set-up: {len(docs)} documents issued for {period} "
            f"({sum(len(b) for _, b in bodies.values())} bytes of exports), "
            f"{time.monotonic() - t_start:.1f} s")

        body = {"project_id": ids["burst"], "flavor_id": ids["h100.1x"],
                "priority_class": "opportunistic", "duration_s": 1}
        all_acked, base, failed, done = {}, 0, 0, 0
        bad_ledger, bad_invoices = 0, 0
        totals = dict(acked=0, in_flight=0, in_flight_stored=0, stored=0, lost=0, dup=0,
                      phantom=0, wrong=0)
        restarts = []
        for rnd in range(1, a.rounds + 1):
            if time.monotonic() > deadline:
                log(f"stopping: --max-minutes {a.max_minutes} reached after {done} rounds")
                break
            api.close()
            kill_after = rng.uniform(a.min_kill_s, a.max_kill_s)
            clients = burst(d, token, body, rnd, a.clients, kill_after)
            restart_s = d.start()
            restarts.append(restart_s)
            api = Api(d.port, token)
            problems, st, acked, base = check_round(api, ids["burst"], base, clients, bodies,
                                                    docs, rng, a.sample)
            all_acked.update(acked)
            for k in totals:
                totals[k] += st[k]
            before = sum(c.errors_before_kill for c in clients)
            refused = {}
            for c in clients:
                for s, n in c.refused.items():
                    refused[s] = refused.get(s, 0) + n
            if before or refused:
                problems.append(f"errors before the kill: {before}, refused: {refused}")
            done += 1
            failed += bool(problems)
            bad_ledger += any("ledger" in p for p in problems)
            bad_invoices += any("invoice" in p for p in problems)
            log(f"round {rnd}: kill at {kill_after:.2f} s; acked {st['acked']}, in flight "
                f"{st['in_flight']} ({st['in_flight_stored']} stored), stored {st['stored']}; "
                f"lost {st['lost']}, duplicated {st['dup']}, never sent {st['phantom']}, "
                f"wrong {st['wrong']}; replayed {st['replayed']}; ledger "
                f"{'ok' if not any('ledger' in p for p in problems) else 'BAD'} "
                f"({st['ledger_records']} records); invoices "
                f"{'identical' if not any('invoice' in p for p in problems) else 'CHANGED'}; "
                f"restart {restart_s:.2f} s -> {'ok' if not problems else 'FAIL'}")
            for p in problems:
                log(f"  round {rnd}: {p}")
                if "ledger" in p or "lost" in p:
                    log(d.log_tail(10))

        # Nothing an earlier round stored may have gone in a later crash.
        rows = api.list_all(f"/v1/workloads?project_id={ids['burst']}")
        by_key = {}
        for w in rows:
            by_key.setdefault(w["idempotency_key"], []).append(w["id"])
        gone = [k for k, (_, wid) in all_acked.items() if by_key.get(k) != [wid]]
        if gone:
            failed += 1
            log(f"final check: {len(gone)} acknowledged submissions missing or changed: {gone[:5]}")
        rss = d.peak_rss_kib()
        api.close()
        d.stop()
        restarts.sort()
        verdict = "PASS" if failed == 0 and done > 0 else "FAIL"
        log(f"tally: {done} rounds ({failed} failed) in {time.monotonic() - t_start:.0f} s; "
            f"{totals['acked']} acknowledged submissions, {totals['lost']} lost, "
            f"{totals['dup']} duplicated, {totals['phantom']} never sent, {totals['wrong']} wrong; "
            f"{totals['in_flight']} in flight at the kills ({totals['in_flight_stored']} of them "
            f"stored); {len(rows)} workloads in the store, all {len(all_acked)} acknowledged "
            f"ones {'present once' if not gone else 'NOT all present'}; ledger verify failed "
            f"after {bad_ledger} restarts, invoice bodies changed after {bad_invoices}; "
            f"restart p50 {common.percentile(restarts, 50):.2f} s, max "
            f"{restarts[-1] if restarts else float('nan'):.2f} s; daemon peak RSS (last start) "
            f"{(rss or 0) // 1024} MiB")
        log(f"{verdict}: SIGKILL during {a.clients}-connection submission bursts, {done} rounds")
        return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
