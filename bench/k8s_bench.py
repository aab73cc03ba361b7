#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Helpers of bench/k8s_bench.sh: gpuaas against Kueue on one Kubernetes
control plane. Standard library only.

The workload is Kueue's scheduler-performance baseline (5 cohorts x 6
ClusterQueues, nominal 20, borrowing limit 100; per queue 350 small (1 unit),
100 medium (5), 50 large (20), made every 100 / 500 / 1200 ms). Both sides get
the same mix; --runtime-ms sets the run times (gpuaas counts whole seconds, so
the bench's default rounds Kueue's 200 / 500 / 1000 ms up to 1 s for both).

  k8s_bench.py kueue-config OUT --scale S --runtime-ms A,B,C
  k8s_bench.py kueue-reclaim-config OUT --rounds R --grace-ms G
  k8s_bench.py kueue-report DIR              wlStates.csv -> JSON summary
  k8s_bench.py gpuaas-setup URL TOKEN        orgs, projects, pools, quotas, flavors
  k8s_bench.py gpuaas-submit URL TOKEN --scale S --runtime-ms A,B,C
  k8s_bench.py gpuaas-report DB              the store -> JSON summary
  k8s_bench.py gpuaas-reclaim URL TOKEN --rounds R --grace-s G
  k8s_bench.py table KUEUE.json GPUAAS.json  the side-by-side table (markdown)
"""
import argparse
import csv
import http.client
import json
import os
import sqlite3
import statistics
import sys
import threading
import time
import urllib.parse

COHORTS, QUEUES, NOMINAL, BORROW = 5, 6, 20, 100
# class, count per queue, creation interval ms, units, priority (Kueue's baseline)
MIX = [("small", 350, 100, 1, 50), ("medium", 100, 500, 5, 100), ("large", 50, 1200, 20, 200)]
# gpuaas flavors for the same units: a large one is two 10-GPU replicas (nodes
# have 10 GPUs, so a team's 20 are two whole nodes).
FLAVOR = {"small": ("bench.1x", 1000, 1), "medium": ("bench.5x", 5000, 1), "large": ("bench.10x", 10000, 2)}
GPU_CLASS = "h100"


def runtimes(arg):
    ms = [int(x) for x in arg.split(",")]
    if len(ms) != len(MIX):
        sys.exit("--runtime-ms takes three numbers: small,medium,large")
    return ms


def scaled(count, scale):
    return max(1, round(count * scale))


def pct(values, p):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, max(0, int(round(p / 100.0 * len(v) + 0.5)) - 1))]


def summary_of(waits, wall_ms):
    """waits: {class: [ms to admission]}."""
    n = sum(len(v) for v in waits.values())
    out = {"workloads": n, "wall_ms": wall_ms,
           "admitted_per_s": round(n / (wall_ms / 1000.0), 1) if wall_ms else None, "classes": {}}
    for cls, v in waits.items():
        out["classes"][cls] = {"n": len(v), "p50_ms": pct(v, 50), "p99_ms": pct(v, 99),
                               "max_ms": max(v) if v else None,
                               "mean_ms": round(statistics.mean(v)) if v else None}
    return out


# ---- Kueue ----------------------------------------------------------------

def kueue_config(a):
    ms = runtimes(a.runtime_ms)
    lines = ["resourceFlavor:", "  name: rf", "cohorts:", "  - className: cohort",
             f"    count: {COHORTS}", "    queuesSets:", "    - className: cq",
             f"      count: {QUEUES}", f"      nominalQuota: {NOMINAL}",
             f"      borrowingLimit: {BORROW}", "      reclaimWithinCohort: Any",
             "      withinClusterQueue: LowerPriority", "      workloadsSets:"]
    for (cls, count, interval, units, prio), rt in zip(MIX, ms):
        lines += [f"      - count: {scaled(count, a.scale)}", f"        creationIntervalMs: {interval}",
                  "        workloads:", f"        - className: {cls}", f"          runtimeMs: {rt}",
                  f"          priority: {prio}", f"          request: {units}"]
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")


def kueue_reclaim_config(a):
    """One cohort of two queues: the borrower fills the cohort with long
    1-unit workloads, then the owner asks for its nominal 20 every 8 s:
    Kueue reclaims 20 of the borrower's workloads each time (the runner ends
    an eviction at once, so Kueue's figure has no grace in it)."""
    y = f"""resourceFlavor:
  name: rf
cohorts:
  - className: reclaim
    count: 1
    queuesSets:
    - className: owner
      count: 1
      nominalQuota: {NOMINAL}
      borrowingLimit: {BORROW}
      reclaimWithinCohort: Any
      withinClusterQueue: LowerPriority
      workloadsSets:
      - count: {a.rounds}
        creationIntervalMs: 8000
        workloads:
        - className: owner
          runtimeMs: 3000
          priority: 100
          request: {NOMINAL}
    - className: borrower
      count: 1
      nominalQuota: {NOMINAL}
      borrowingLimit: {BORROW}
      reclaimWithinCohort: Any
      withinClusterQueue: LowerPriority
      workloadsSets:
      - count: {2 * NOMINAL + 20}
        creationIntervalMs: 20
        workloads:
        - className: borrower
          runtimeMs: {8000 * (a.rounds + 1)}
          priority: 50
          request: 1
"""
    with open(a.out, "w") as f:
        f.write(y)


def kueue_report(a):
    waits = {}
    with open(os.path.join(a.dir, "wlStates.csv")) as f:
        for row in csv.DictReader(f):
            waits.setdefault(row["class name"], []).append(int(row["ms to admitted"]))
    wall_ms = int(open(os.path.join(a.dir, "wall_ms")).read())
    json.dump(summary_of(waits, wall_ms), sys.stdout)


# ---- gpuaas ---------------------------------------------------------------

class Api:
    def __init__(self, url, token):
        u = urllib.parse.urlparse(url)
        self.host, self.port, self.token = u.hostname, u.port, token
        self.local = threading.local()

    def call(self, method, path, body=None):
        c = getattr(self.local, "conn", None)
        for attempt in range(2):
            if c is None:
                c = self.local.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
            try:
                c.request(method, path, None if body is None else json.dumps(body),
                          {"Authorization": "Bearer " + self.token, "Content-Type": "application/json"})
                r = c.getresponse()
                data = r.read()
                break
            except (http.client.HTTPException, OSError):
                c.close()
                c = self.local.conn = None
                if attempt:
                    raise
        if r.status >= 300:
            raise RuntimeError(f"{method} {path}: {r.status} {data[:300]!r}")
        return json.loads(data) if data else None

    def items(self, path):
        sep = "&" if "?" in path else "?"
        return self.call("GET", f"{path}{sep}limit=1000")["items"]


def ids_by_name(api, path):
    return {x["name"]: x["id"] for x in api.items(path)}


def gpuaas_setup(a):
    api = Api(a.url, a.token)
    nodes = sorted(api.items("/v1/nodes"), key=lambda n: n["name"])
    need = COHORTS * QUEUES * 2
    if len(nodes) < need:
        sys.exit(f"gpuaas-setup: {len(nodes)} nodes, the mix needs {need} of 10 GPUs")
    gpus = {}
    for g in api.items("/v1/gpus"):
        gpus.setdefault(g["node_id"], []).append(g["id"])
    cls = ids_by_name(api, "/v1/gpu-classes")[GPU_CLASS]
    for name, (fname, milli, _) in FLAVOR.items():
        api.call("POST", "/v1/flavors", {"name": fname, "gpu_class_id": cls, "gpu_milli": milli,
                                         "vcpus": 1, "memory_mib": 1024})
    k = 0
    for c in range(COHORTS):
        org = api.call("POST", "/v1/organizations", {"name": f"cohort-{c}"})["id"]
        for q in range(QUEUES):
            p = api.call("POST", "/v1/projects", {"name": f"cq-{c}-{q}", "org_id": org})["id"]
            ids = gpus[nodes[k]["id"]] + gpus[nodes[k + 1]["id"]]
            k += 2
            api.call("POST", "/v1/pools", {"name": f"cq-{c}-{q}", "owner_project_id": p,
                                           "gpu_ids": ids, "access_org_ids": [org]})
            api.call("POST", "/v1/quotas", {"project_id": p, "gpu_class_id": cls,
                                            "guaranteed_milli": None,
                                            "limit_milli": (NOMINAL + BORROW) * 1000})


def gpuaas_submit(a):
    """Submits the mix on Kueue's schedule: per queue and class, one every
    interval, all queues at once (one thread per cohort, in time order)."""
    api = Api(a.url, a.token)
    ms = runtimes(a.runtime_ms)
    projects = ids_by_name(api, "/v1/projects")
    flavors = ids_by_name(api, "/v1/flavors")
    plan = []
    for c in range(COHORTS):
        for q in range(QUEUES):
            for (cls, count, interval, _, prio), rt in zip(MIX, ms):
                fname, _, replicas = FLAVOR[cls]
                for i in range(scaled(count, a.scale)):
                    plan.append((c, (i + 1) * interval, {
                        "project_id": projects[f"cq-{c}-{q}"], "flavor_id": flavors[fname],
                        "replicas": replicas, "priority": prio, "priority_class": a.priority_class,
                        "duration_s": max(1, (rt + 999) // 1000), "grace_s": 1, "name": cls,
                        "command": "true"}))
    plan.sort(key=lambda x: x[1])
    start = time.monotonic()
    late = []

    def run(cohort):
        for c, at, body in plan:
            if c != cohort:
                continue
            d = start + at / 1000.0 - time.monotonic()
            if d > 0:
                time.sleep(d)
            else:
                late.append(-d)
            api.call("POST", "/v1/workloads", body)

    ts = [threading.Thread(target=run, args=(c,)) for c in range(COHORTS)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print(json.dumps({"submitted": len(plan), "late": len(late),
                      "late_p99_ms": round(1000 * pct(late, 99)) if late else 0}))


def gpuaas_report(a):
    db = sqlite3.connect(f"file:{a.db}?mode=ro", uri=True)
    rows = db.execute("""
        SELECT w.name, w.submitted_ms,
               (SELECT min(at_ms) FROM workload_events e WHERE e.workload_id = w.id AND e.type = 'admitted'),
               (SELECT max(at_ms) FROM workload_events e WHERE e.workload_id = w.id), w.state
        FROM workloads w WHERE w.name IN ('small', 'medium', 'large')""").fetchall()
    waits, states = {}, {}
    first, last = None, None
    for name, sub, adm, end, state in rows:
        states[state] = states.get(state, 0) + 1
        if adm is not None:
            waits.setdefault(name, []).append(adm - sub)
        first = sub if first is None else min(first, sub)
        last = end if last is None else max(last, end or 0)
    out = summary_of(waits, (last - first) if rows else 0)
    out["states"] = states
    json.dump(out, sys.stdout)


def wait_until(pred, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.1)
    sys.exit(f"gpuaas-reclaim: timed out waiting for {what}")


def gpuaas_reclaim(a):
    """Cohort 0: cq-0-1 borrows the whole cohort with P2 work (12 x 10 GPUs,
    grace G), then cq-0-0 submits P1 for its guarantee (2 x 10 GPUs). The
    latency is the owner's submit -> its 'started' event: every one of its
    pods Running, as the daemon saw it (the 'running' event is written when
    the pods are asked for, once the victims' pods are gone).
    Each round cancels everything and starts again."""
    api = Api(a.url, a.token)
    projects = ids_by_name(api, "/v1/projects")
    fl = ids_by_name(api, "/v1/flavors")["bench.10x"]
    owner, borrower = projects["cq-0-0"], projects["cq-0-1"]
    cohort_gpus = QUEUES * NOMINAL // 10

    def state(w):
        return api.call("GET", f"/v1/workloads/{w}")["state"]

    lat = []
    for _ in range(a.rounds):
        held = [api.call("POST", "/v1/workloads", {
            "project_id": borrower, "flavor_id": fl, "priority_class": "opportunistic",
            "duration_s": 3600, "grace_s": a.grace_s, "name": "borrower", "command": "sleep inf"})["id"]
            for _ in range(cohort_gpus)]
        wait_until(lambda: all(state(w) == "running" for w in held), 60, "the borrower to fill the cohort")
        own = api.call("POST", "/v1/workloads", {
            "project_id": owner, "flavor_id": fl, "replicas": 2, "priority_class": "owned",
            "duration_s": 3600, "name": "owner", "command": "sleep inf"})["id"]
        def started():
            return {e["type"]: e["at_ms"] for e in api.items(f"/v1/events?workload_id={own}")}
        wait_until(lambda: "started" in started(), 60, "the owner's pods to run")
        lat.append(started()["started"] - api.call("GET", f"/v1/workloads/{own}")["submitted_ms"])
        for w in held + [own]:
            try:
                api.call("POST", f"/v1/workloads/{w}/cancel")
            except RuntimeError:
                pass  # already ended
        wait_until(lambda: all(state(w) not in ("queued", "admitted", "running", "preempting")
                               for w in held + [own]), 60, "the round's work to end")
    print(json.dumps({"rounds": len(lat), "grace_s": a.grace_s, "reclaim_ms": lat,
                      "p50_ms": pct(lat, 50), "max_ms": max(lat)}))


# ---- the table --------------------------------------------------------------

def table(a):
    k, g = json.load(open(a.kueue)), json.load(open(a.gpuaas))
    kr = json.load(open(a.kueue_reclaim)) if a.kueue_reclaim else None
    gr = json.load(open(a.gpuaas_reclaim)) if a.gpuaas_reclaim else None

    def f(v, unit=""):
        return "-" if v is None else f"{v:,}{unit}"
    rows = [("workloads", f(k["workloads"]), f(g["workloads"])),
            ("wall time", f(k["wall_ms"], " ms"), f(g["wall_ms"], " ms")),
            ("admitted workloads/s", f(k["admitted_per_s"]), f(g["admitted_per_s"]))]
    for cls, *_ in MIX:
        kc, gc = k["classes"].get(cls, {}), g["classes"].get(cls, {})
        rows.append((f"time to admission {cls} p50 / p99",
                     f"{f(kc.get('p50_ms'))} / {f(kc.get('p99_ms'))} ms",
                     f"{f(gc.get('p50_ms'))} / {f(gc.get('p99_ms'))} ms"))
    if kr or gr:
        kc = (kr or {}).get("classes", {}).get("owner", {})
        rows.append(("owner's reclaim p50 / max",
                     f"{f(kc.get('p50_ms'))} / {f(kc.get('max_ms'))} ms (admission, no grace)",
                     f"{f(gr['p50_ms'])} / {f(gr['max_ms'])} ms (every pod of the owner Running, victims' grace {gr['grace_s']} s)" if gr else "-"))
    rows += [("controller CPU seconds", f(k.get("cpu_s")), f(g.get("cpu_s"))),
             ("controller peak RSS", f(k.get("rss_mib"), " MiB"), f(g.get("rss_mib"), " MiB"))]
    print("| | Kueue (minimalkueue) | gpuaas (kubernetes backend) |")
    print("|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} |")
    if k.get("admitted_per_s") and g.get("admitted_per_s"):
        print(f"\ngpuaas admitted {g['admitted_per_s'] / k['admitted_per_s']:.1f}x Kueue's workloads/s.")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("kueue-config"); p.add_argument("out")
    p.add_argument("--scale", type=float, default=1.0); p.add_argument("--runtime-ms", default="1000,1000,1000")
    p = sub.add_parser("kueue-reclaim-config"); p.add_argument("out"); p.add_argument("--rounds", type=int, default=5)
    p = sub.add_parser("kueue-report"); p.add_argument("dir")
    p = sub.add_parser("gpuaas-setup"); p.add_argument("url"); p.add_argument("token")
    p = sub.add_parser("gpuaas-submit"); p.add_argument("url"); p.add_argument("token")
    p.add_argument("--scale", type=float, default=1.0); p.add_argument("--runtime-ms", default="1000,1000,1000")
    p.add_argument("--priority-class", default="opportunistic")
    p = sub.add_parser("gpuaas-report"); p.add_argument("db")
    p = sub.add_parser("gpuaas-reclaim"); p.add_argument("url"); p.add_argument("token")
    p.add_argument("--rounds", type=int, default=5); p.add_argument("--grace-s", type=int, default=1)
    p = sub.add_parser("table"); p.add_argument("kueue"); p.add_argument("gpuaas")
    p.add_argument("--kueue-reclaim"); p.add_argument("--gpuaas-reclaim")
    a = ap.parse_args()
    {"kueue-config": kueue_config, "kueue-reclaim-config": kueue_reclaim_config,
     "kueue-report": kueue_report, "gpuaas-setup": gpuaas_setup, "gpuaas-submit": gpuaas_submit,
     "gpuaas-report": gpuaas_report, "gpuaas-reclaim": gpuaas_reclaim, "table": table}[a.cmd](a)


if __name__ == "__main__":
    main()
