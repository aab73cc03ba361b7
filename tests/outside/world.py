# SPDX-License-Identifier: Apache-2.0
"""The seeded world the outside-in tests run against: a real gpuaasd on
127.0.0.1 (a free port, a fresh store, the simulated fleet), and two
organizations built through the API alone, each with a project, one user
per role, a pool, a quota, a budget, running, finished and cancelled work
(so usage, allocations and events), a preemption of one tenant's borrowed
work by the other's owned work, and last month's finished work imported
through POST /v1/history (with the price versions it is rated at) and
invoiced with POST /v1/invoices/issue, so each tenant has an issued invoice.

Every object of organization A is named with "alpha", every object of B
with "zulu", so a body that names another tenant's object is found by a
substring check. Shared objects (the fleet, GPU class, flavor, prices) are
named neutrally.

Run as a script it starts and seeds a daemon, writes world.json (base URL,
tokens per caller) into the given directory and waits until killed; the
schemathesis runner uses it that way.
"""
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

FLEET = {"nodes": [
    {"name": "node-a", "cpu_milli": 64000, "memory_mib": 262144, "gpus": 8, "model": "H100",
     "labels": {"rack": "a"}},
    {"name": "node-b", "cpu_milli": 64000, "memory_mib": 262144, "gpus": 8, "model": "H100",
     "labels": {"rack": "b"}},
]}

ORGS = {"A": "alpha", "B": "zulu"}
ROLES = ["org-admin", "project-admin", "member", "viewer"]
SANITIZER = re.compile(r"ERROR: AddressSanitizer|LeakSanitizer|runtime error:|"
                       r"UndefinedBehaviorSanitizer")


class Daemon:
    """gpuaasd started on a free loopback port with a fresh store."""

    def __init__(self, binary, workdir):
        self.dir = workdir
        self.log_path = os.path.join(workdir, "daemon.log")
        fleet = os.path.join(workdir, "fleet.json")
        with open(fleet, "w") as f:
            json.dump(FLEET, f)
        token_file = os.path.join(workdir, "token")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [binary, "--listen", "127.0.0.1:0", "--db", os.path.join(workdir, "gpuaas.db"),
             "--bootstrap-token-file", token_file, "--threads", "4", "--sim-fleet", fleet,
             "--grace-s", "1"],
            stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.time() + 30
        port = None
        while time.time() < deadline and port is None:
            if self.proc.poll() is not None:
                raise RuntimeError("gpuaasd exited during start:\n" + self.log_text())
            m = re.search(r"msg=ready .*port=(\d+)", self.log_text())
            if m:
                port = int(m.group(1))
            else:
                time.sleep(0.05)
        if port is None:
            raise RuntimeError("gpuaasd did not become ready:\n" + self.log_text())
        self.port = port
        self.url = "http://127.0.0.1:%d" % port
        with open(token_file) as f:
            self.admin_token = f.read().strip()

    def log_text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def alive(self):
        return self.proc.poll() is None

    def sanitizer_lines(self):
        return [l for l in self.log_text().splitlines() if SANITIZER.search(l)]

    def stop(self):
        """SIGTERM; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


class Client:
    """HTTP/1.1 requests to the daemon, one connection each."""

    def __init__(self, port):
        self.port = port

    def request(self, method, path, token=None, body=None, headers=None, stream=False):
        """Returns (status, headers dict lower-cased, body text). For an event
        stream, only what arrives in the first half second."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        hdrs = dict(headers or {})
        if token:
            hdrs["Authorization"] = "Bearer " + token
        data = None
        if body is not None:
            data = body if isinstance(body, (bytes, str)) else json.dumps(body)
            hdrs.setdefault("Content-Type", "application/json")
        conn.request(method, path, body=data, headers=hdrs)
        resp = conn.getresponse()
        rh = {k.lower(): v for k, v in resp.getheaders()}
        if stream and rh.get("content-type", "").startswith("text/event-stream"):
            conn.sock.settimeout(0.5)
            chunks = []
            try:
                while True:
                    c = resp.read1(65536)
                    if not c:
                        break
                    chunks.append(c)
            except OSError:
                pass
            text = b"".join(chunks).decode(errors="replace")
        else:
            text = resp.read().decode(errors="replace")
        conn.close()
        return resp.status, rh, text

    def json(self, method, path, token, body=None, want=None):
        status, _, text = self.request(method, path, token, body)
        if want is not None and status != want:
            raise AssertionError("%s %s %s: want %s, got %s %s" % (
                method, path, json.dumps(body) if body is not None else "", want, status, text))
        return json.loads(text) if text else None


def last_month():
    """The month before this one (UTC) as "YYYY-MM"."""
    t = time.gmtime()
    y, m = (t.tm_year, t.tm_mon - 1) if t.tm_mon > 1 else (t.tm_year - 1, 12)
    return "%04d-%02d" % (y, m)


# Last month's work of each tenant, imported: (tenant, flavor key, class, replicas, day,
# hours). Amounts at the imported prices: A 2 x 3 h x 3.60 + 1 h x 14.40 x 0.6 = 30.24 EUR,
# B 1 x 2 h x 3.60 + 2 x 1 h x 14.40 = 36.00 EUR.
HISTORY = [("A", "flavor1", "owned", 2, 10, 3), ("A", "flavor4", "opportunistic", 1, 11, 1),
           ("B", "flavor1", "owned", 1, 10, 2), ("B", "flavor4", "owned", 2, 12, 1)]
HISTORY_TOTALS = {"A": 30240000, "B": 36000000}


def history(c, w, admin, flavor, flavor4):
    """Imports last month's finished work of both tenants, at price versions of
    last month (the import may carry them: no usage of the flavors is metered
    yet), and issues each organization's invoice of that month."""
    ids = w["ids"]
    last = last_month()
    since = last + "-01T00:00:00Z"
    flavors = {"flavor1": flavor, "flavor4": flavor4}
    body = {"prices": [
        {"flavor_id": flavor, "currency": "EUR", "price_per_hour_micros": 3600000,
         "effective_from": since},
        {"flavor_id": flavor4, "currency": "EUR", "price_per_hour_micros": 14400000,
         "effective_from": since}], "workloads": []}
    for key, flv, pclass, replicas, day, hours in HISTORY:
        body["workloads"].append({
            "project_id": ids[key + ":project"], "flavor_id": flavors[flv],
            "name": "%s-history-%d" % (ORGS[key], len(body["workloads"])),
            "priority_class": pclass, "replicas": replicas,
            "started_at": "%s-%02dT08:00:00Z" % (last, day),
            "finished_at": "%s-%02dT%02d:00:00Z" % (last, day, 8 + hours)})
    got = c.json("POST", "/v1/history", admin, body, 201)
    for (key, *_), wid in zip(HISTORY, got["workload_ids"]):
        ids.setdefault(key + ":history", wid)
    w["period"] = last
    for key in ORGS:
        inv = c.json("POST", "/v1/invoices/issue", admin,
                     {"org_id": ids[key + ":org"], "period": last}, 201)["items"][0]
        if inv["total_micros"] != HISTORY_TOTALS[key]:
            raise AssertionError("invoice of %s: %s, not %s" % (
                key, inv["total_micros"], HISTORY_TOTALS[key]))
        ids[key + ":invoice"] = inv["id"]
    if not c.json("GET", "/v1/ledger/verify", admin, want=200)["ok"]:
        raise AssertionError("the ledger does not verify after the history import")


def seed(c, admin):
    """Builds the world through the API as the bootstrap admin. Returns the
    world: ids by name and a token per caller ("admin", "A:member", ...)."""
    w = {"ids": {}, "tokens": {"admin": admin}, "users": {}}
    ids = w["ids"]

    def make(name, res, body):
        ids[name] = c.json("POST", "/v1/" + res, admin, body, 201)["id"]
        return ids[name]

    cluster = c.json("GET", "/v1/clusters?name=sim", admin, want=200)["items"][0]["id"]
    gclass = c.json("GET", "/v1/gpu-classes?name=h100", admin, want=200)["items"][0]["id"]
    ids["cluster"], ids["gpu_class"] = cluster, gclass
    for key, n in ORGS.items():
        org = make(key + ":org", "organizations", {"name": n + "-org"})
        make(key + ":project", "projects", {"org_id": org, "name": n + "-proj"})
    for key, n in ORGS.items():
        rack = "a" if key == "A" else "b"
        other = ids[("B" if key == "A" else "A") + ":project"]
        make(key + ":pool", "pools", {
            "name": n + "-pool", "owner_project_id": ids[key + ":project"], "cluster_id": cluster,
            "node_selector": {"rack": rack}, "access_project_ids": [other],
            "cost_per_gpu_hour_micros": 2000000, "currency": "EUR"})
        make(key + ":quota", "quotas", {"project_id": ids[key + ":project"],
                                        "gpu_class_id": gclass, "limit_milli": 16000})
        make(key + ":org-quota", "org-quotas", {"org_id": ids[key + ":org"],
                                                "gpu_class_id": gclass, "limit_milli": 16000})
        make(key + ":budget", "budgets", {"project_id": ids[key + ":project"],
                                          "money_micros": 900000000000, "currency": "EUR"})
        make(key + ":org-budget", "budgets", {"org_id": ids[key + ":org"],
                                              "money_micros": 900000000000, "currency": "EUR"})
        for role in ROLES:
            uid = make("%s:%s:user" % (key, role), "users", {"name": "%s-%s" % (n, role)})
            scope = ({"org_id": ids[key + ":org"]} if role == "org-admin"
                     else {"project_id": ids[key + ":project"]})
            make("%s:%s:binding" % (key, role), "role-bindings",
                 dict({"user_id": uid, "role": role}, **scope))
            tok = c.json("POST", "/v1/tokens", admin, {"user_id": uid, "name": n + "-tok"}, 201)
            ids["%s:%s:token" % (key, role)] = tok["id"]
            w["tokens"]["%s:%s" % (key, role)] = tok["token"]
    flavor = make("flavor1", "flavors", {"name": "h100.1x", "gpu_class_id": gclass,
                                         "gpu_milli": 1000, "vcpus": 4, "memory_mib": 16384,
                                         "price_per_hour_micros": 2500000})
    flavor4 = make("flavor4", "flavors", {"name": "h100.4x", "gpu_class_id": gclass,
                                          "gpu_milli": 4000, "vcpus": 16, "memory_mib": 65536,
                                          "price_per_hour_micros": 10000000})
    # Effective from now (a price may not start in the past): before any of the work below.
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time()))
    make("price", "prices", {"flavor_id": flavor, "currency": "EUR",
                             "price_per_hour_micros": 3600000, "effective_from": since})
    make("price4", "prices", {"flavor_id": flavor4, "currency": "EUR",
                              "price_per_hour_micros": 14400000, "effective_from": since})

    history(c, w, admin, flavor, flavor4)

    def submit(name, key, flv, pclass, duration, want_state):
        wid = c.json("POST", "/v1/workloads", w["tokens"][key + ":member"], {
            "project_id": ids[key + ":project"], "flavor_id": flv, "name": name,
            "priority_class": pclass, "duration_s": duration}, 201)["id"]
        ids[name] = wid
        deadline = time.time() + 30
        while True:
            st = c.json("GET", "/v1/workloads/%d" % wid, admin, want=200)["state"]
            if st in want_state:
                return wid
            if time.time() > deadline:
                raise AssertionError("workload %s stayed %s, not %s" % (name, st, want_state))
            time.sleep(0.1)

    for key, n in ORGS.items():
        submit(n + "-done", key, flavor, "owned", 1, ("succeeded",))
        wid = submit(n + "-cancelled", key, flavor, "owned", 3600, ("running",))
        c.json("POST", "/v1/workloads/%d/cancel" % wid, w["tokens"][key + ":member"], None, 202)
    # A's owned work fills A's pool (rack a); A's opportunistic work borrows
    # B's; B's owned work takes B's pool back: a preemption across tenants.
    submit("alpha-run", "A", flavor4, "owned", 3600, ("running",))
    submit("alpha-run2", "A", flavor4, "owned", 3600, ("running",))
    submit("alpha-borrow", "A", flavor4, "opportunistic", 3600, ("running",))
    submit("zulu-run", "B", flavor4, "owned", 3600, ("running",))
    submit("zulu-reclaim", "B", flavor4, "owned", 3600, ("running",))
    deadline = time.time() + 30
    while not c.json("GET", "/v1/preemptions", admin, want=200)["items"]:
        if time.time() > deadline:
            raise AssertionError("no preemption happened")
        time.sleep(0.1)
    for wid in (ids["alpha-cancelled"], ids["zulu-cancelled"]):
        deadline = time.time() + 30
        while c.json("GET", "/v1/workloads/%d" % wid, admin, want=200)["state"] != "cancelled":
            if time.time() > deadline:
                raise AssertionError("cancelled work did not end")
            time.sleep(0.1)
    ids["A:event"] = c.json("GET", "/v1/events?project_id=%d&limit=1" % ids["A:project"], admin,
                            want=200)["items"][0]["id"]
    ids["B:event"] = c.json("GET", "/v1/events?project_id=%d&limit=1" % ids["B:project"], admin,
                            want=200)["items"][0]["id"]
    return w


def main():
    out = sys.argv[1]
    d = Daemon(os.environ["GPUAASD"], tempfile.mkdtemp(prefix="gpuaas-world-", dir=out))
    c = Client(d.port)
    w = seed(c, d.admin_token)
    w["url"], w["pid"], w["log"] = d.url, d.proc.pid, d.log_path
    with open(os.path.join(out, "world.json"), "w") as f:
        json.dump(w, f)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(d.stop()))
    while d.alive():
        time.sleep(0.5)
    sys.exit(1)


if __name__ == "__main__":
    main()
