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

Kueue with real Jobs (k8s_bench.sh --kueue-jobs; the kube-apiserver from
K8S_SERVER, K8S_CA, K8S_TOKEN in the environment):
  k8s_bench.py kueue-jobs-setup --scale S    flavor, priority classes, queues
  k8s_bench.py kueue-jobs-watch DIR --expect N   records admissions, pods Running
  k8s_bench.py kueue-jobs-submit DIR --scale S --runtime-ms A,B,C
  k8s_bench.py kueue-jobs-report DIR         the records -> JSON summary
  k8s_bench.py kueue-jobs-reclaim --rounds R --grace-s G
  k8s_bench.py kube-requests OUT [--since F] the apiserver's request counts (delta)
  k8s_bench.py kube-cleanup                  deletes the queues' namespaces
"""
import argparse
import csv
import http.client
import json
import os
import sqlite3
import ssl
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


def play(plan, n_threads, send):
    """Sends each (thread, at_ms, item) of plan at its time after now, one
    thread per index below n_threads taking its own items in time order;
    returns how late (seconds) each send that could not be on time was."""
    plan = sorted(plan, key=lambda x: x[1])
    start = time.monotonic()
    late = []

    def run(me):
        for who, at, item in plan:
            if who != me:
                continue
            d = start + at / 1000.0 - time.monotonic()
            if d > 0:
                time.sleep(d)
            else:
                late.append(-d)
            send(item)

    ts = [threading.Thread(target=run, args=(i,)) for i in range(n_threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return late


def submit_summary(n, late):
    return {"submitted": n, "late": len(late),
            "late_p99_ms": round(1000 * pct(late, 99)) if late else 0}


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
    late = play(plan, COHORTS, lambda body: api.call("POST", "/v1/workloads", body))
    print(json.dumps(submit_summary(len(plan), late)))


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
    # Submit -> every replica Running as gpuaasd saw it (its 'started' event).
    running = {}
    for name, sub, started in db.execute("""
        SELECT w.name, w.submitted_ms,
               (SELECT min(at_ms) FROM workload_events e WHERE e.workload_id = w.id AND e.type = 'started')
        FROM workloads w WHERE w.name IN ('small', 'medium', 'large')"""):
        if started is not None:
            running.setdefault(name, []).append(started - sub)
    out["to_running"] = {cls: {"n": len(v), "p50_ms": pct(v, 50), "p99_ms": pct(v, 99)}
                         for cls, v in running.items()}
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


# ---- Kueue with real Jobs ---------------------------------------------------
# The same queues as the runner makes (one ClusterQueue per team, nominal 20,
# borrowing limit 100, in its cohort; a LocalQueue in a namespace of its own),
# covering nvidia.com/gpu only; the same mix as suspended batch/v1 Jobs of the
# same shape as gpuaas's flavors: small 1 pod x 1 GPU, medium 1 x 5, large
# 2 x 10 (parallelism = completions = pods). Priorities are
# WorkloadPriorityClasses.

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
FLAVOR_NAME = "gpu"
GPU = "nvidia.com/gpu"
LQ = "lq"


def shape(cls):
    _, milli, pods = FLAVOR[cls]
    return pods, milli // 1000


def now_ms():
    return int(time.time() * 1000)


class Kube:
    """The kube-apiserver over HTTPS with the admin's bearer token."""

    def __init__(self):
        u = urllib.parse.urlparse(os.environ["K8S_SERVER"])
        self.host, self.port, self.token = u.hostname, u.port, os.environ["K8S_TOKEN"]
        self.ctx = ssl.create_default_context(cafile=os.environ["K8S_CA"])
        self.local = threading.local()

    def connect(self, timeout=60):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)

    def call(self, method, path, body=None, ok=(200, 201), ctype="application/json"):
        c = getattr(self.local, "conn", None)
        for attempt in range(3):
            if c is None:
                c = self.local.conn = self.connect()
            try:
                c.request(method, path, None if body is None else json.dumps(body),
                          {"Authorization": "Bearer " + self.token, "Content-Type": ctype,
                           "Accept": "application/json"})
                r = c.getresponse()
                data = r.read()
                break
            except (http.client.HTTPException, OSError):
                c.close()
                c = self.local.conn = None
                if attempt == 2:
                    raise
        if r.status not in ok:
            raise RuntimeError(f"{method} {path}: {r.status} {data[:300]!r}")
        return r.status, (json.loads(data) if data else None)

    def create(self, path, body, exist_ok=False):
        return self.call("POST", path, body, ok=(200, 201, 409) if exist_ok else (200, 201))[1]

    def get(self, path):
        return self.call("GET", path)[1]

    def watch(self, path, on_event, ready=None):
        """Lists PATH, then follows its watch for ever (a daemon thread's
        work): on_event(type, object, ms seen) for every item and change."""
        sep = "&" if "?" in path else "?"
        while True:
            lst = self.get(path)
            t = now_ms()
            for o in lst["items"]:
                on_event("ADDED", o, t)
            rv = lst["metadata"]["resourceVersion"]
            if ready is not None:
                ready.set()
            while rv is not None:
                c = self.connect(timeout=None)
                try:
                    c.request("GET", f"{path}{sep}watch=1&allowWatchBookmarks=true&resourceVersion={rv}",
                              headers={"Authorization": "Bearer " + self.token, "Accept": "application/json"})
                    r = c.getresponse()
                    if r.status != 200:
                        r.read()
                        rv = None
                        break
                    for line in r:
                        ev = json.loads(line)
                        o = ev["object"]
                        if ev["type"] == "ERROR":
                            rv = None  # 410 Gone: list again
                            break
                        rv = o["metadata"].get("resourceVersion", rv)
                        if ev["type"] != "BOOKMARK":
                            on_event(ev["type"], o, now_ms())
                except (http.client.HTTPException, OSError, ValueError):
                    time.sleep(0.2)  # then watch again from rv
                finally:
                    c.close()


def cond_true(o, kind):
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in (o.get("status") or {}).get("conditions") or [])


def cq_body(name, cohort):
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"cohortName": cohort, "namespaceSelector": {},
                     "resourceGroups": [{"coveredResources": [GPU], "flavors": [{
                         "name": FLAVOR_NAME, "resources": [{"name": GPU, "nominalQuota": NOMINAL,
                                                             "borrowingLimit": BORROW}]}]}],
                     "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}}}


def kueue_jobs_setup(a):
    k = Kube()
    k.create(f"{KUEUE}/resourceflavors", {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                                          "metadata": {"name": FLAVOR_NAME}, "spec": {}}, True)
    for *_, prio in MIX + [("reclaim", 0, 0, 0, 1000)]:
        k.create(f"{KUEUE}/workloadpriorityclasses", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
            "metadata": {"name": f"p{prio}"}, "value": prio}, True)
    names = []
    for c in range(COHORTS):
        for q in range(QUEUES):
            n = f"cq-{c}-{q}"
            names.append(n)
            k.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                            "metadata": {"name": n, "labels": {"gpuaas.bench/kueue-jobs": "true"}}}, True)
            k.create(f"{KUEUE}/clusterqueues", cq_body(n, f"cohort-{c}"), True)
            k.create(f"{KUEUE}/namespaces/{n}/localqueues", {
                "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                "metadata": {"name": LQ, "namespace": n}, "spec": {"clusterQueue": n}}, True)
    end = time.monotonic() + 120
    while time.monotonic() < end:
        cqs = {o["metadata"]["name"] for o in k.get(f"{KUEUE}/clusterqueues")["items"] if cond_true(o, "Active")}
        lqs = sum(1 for o in k.get(f"{KUEUE}/localqueues")["items"] if cond_true(o, "Active"))
        sas = {o["metadata"]["namespace"] for o in k.get("/api/v1/serviceaccounts?fieldSelector=metadata.name%3Ddefault")["items"]}
        if all(n in cqs and n in sas for n in names) and lqs >= len(names):
            print(json.dumps({"jobs": len(names) * sum(scaled(m[1], a.scale) for m in MIX)}))
            return
        time.sleep(0.5)
    sys.exit("kueue-jobs-setup: the ClusterQueues did not become Active (is Kueue's manager running?)")


def job_body(name, cls, runtime_s, prio, grace_s=1, pods=None, gpus=None):
    if pods is None:
        pods, gpus = shape(cls)
    ann = {} if runtime_s is None else {"gpuaas.io/expected-runtime": f"{runtime_s}s"}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": LQ,
                                                  "kueue.x-k8s.io/priority-class": f"p{prio}",
                                                  "gpuaas.bench/class": cls}},
            "spec": {"suspend": True, "parallelism": pods, "completions": pods, "backoffLimit": 0,
                     "template": {"metadata": {"annotations": ann, "labels": {"gpuaas.bench/class": cls}},
                                  "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": grace_s,
                                           "enableServiceLinks": False,
                                           "nodeSelector": {"type": "kwok"},
                                           "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists"},
                                                           {"key": GPU, "operator": "Exists"}],
                                           "containers": [{"name": "work", "image": "busybox", "command": ["true"],
                                                           "resources": {"requests": {GPU: str(gpus)},
                                                                         "limits": {GPU: str(gpus)}}}]}}}}


def kueue_jobs_submit(a):
    """The mix on gpuaas-submit's schedule, as suspended Jobs, one thread per
    queue (a create costs the apiserver more than a submit costs gpuaasd:
    one thread per cohort fell seconds behind); DIR/submit.json: one line
    per Job with the times its create was sent and returned."""
    k = Kube()
    ms = runtimes(a.runtime_ms)
    plan = []
    for c in range(COHORTS):
        for q in range(QUEUES):
            for (cls, count, interval, _, prio), rt in zip(MIX, ms):
                for i in range(scaled(count, a.scale)):
                    plan.append((c * QUEUES + q, (i + 1) * interval, (f"cq-{c}-{q}",
                                 job_body(f"{cls}-{i}", cls, max(1, (rt + 999) // 1000), prio))))
    rec = []

    def create(item):
        ns, body = item
        t0 = now_ms()
        k.create(f"/apis/batch/v1/namespaces/{ns}/jobs", body)
        rec.append({"job": f"{ns}/{body['metadata']['name']}", "sent_ms": t0, "created_ms": now_ms()})

    late = play(plan, COHORTS * QUEUES, create)
    with open(os.path.join(a.dir, "submit.json"), "w") as f:
        for r in rec:
            f.write(json.dumps(r) + "\n")
    print(json.dumps(submit_summary(len(plan), late)))


def kueue_jobs_watch(a):
    """Follows the Workloads and the Jobs' pods until --expect Workloads have
    finished; DIR/watch.json: per Job the times (this host's clock, ms) the
    watch first saw its Workload, Admitted, Finished, evictions, and all its
    pods Running."""
    k = Kube()
    lock = threading.Lock()
    jobs = {}
    done = threading.Event()

    def rec(key):
        return jobs.setdefault(key, {"job": key, "running_pods": set(), "evicted": 0})

    def on_wl(kind, o, t):
        md = o["metadata"]
        owner = next((r["name"] for r in md.get("ownerReferences") or [] if r.get("kind") == "Job"), None)
        if owner is None:
            return
        with lock:
            r = rec(f"{md['namespace']}/{owner}")
            r.setdefault("workload_ms", t)
            r["created"] = md.get("creationTimestamp")
            for c in (o.get("status") or {}).get("conditions") or []:
                if c.get("status") != "True":
                    continue
                if c["type"] == "Admitted" and "admitted_ms" not in r:
                    r["admitted_ms"], r["admitted_at"] = t, c.get("lastTransitionTime")
                elif c["type"] == "Finished" and "finished_ms" not in r:
                    r["finished_ms"], r["finished_reason"] = t, c.get("reason")
                elif c["type"] == "Evicted" and r.get("evicted_at") != c.get("lastTransitionTime"):
                    r["evicted"] += 1
                    r["evicted_at"] = c.get("lastTransitionTime")
            if sum(1 for x in jobs.values() if "finished_ms" in x) >= a.expect:
                done.set()

    def on_pod(kind, o, t):
        md = o["metadata"]
        job = (md.get("labels") or {}).get("batch.kubernetes.io/job-name")
        if job is None or (o.get("status") or {}).get("phase") != "Running":
            return
        with lock:
            r = rec(f"{md['namespace']}/{job}")
            r["running_pods"].add(md["uid"])
            cls = (md.get("labels") or {}).get("gpuaas.bench/class")
            if cls in FLAVOR and "running_ms" not in r and len(r["running_pods"]) >= shape(cls)[0]:
                r["running_ms"] = t

    ready = [threading.Event(), threading.Event()]
    for i, (path, fn) in enumerate([(f"{KUEUE}/workloads", on_wl),
                                    ("/api/v1/pods?labelSelector=batch.kubernetes.io%2Fjob-name", on_pod)]):
        threading.Thread(target=k.watch, args=(path, fn, ready[i]), daemon=True).start()
    for e in ready:
        e.wait(60)
    open(os.path.join(a.dir, "watch.ready"), "w").close()
    ok = done.wait(a.timeout_s)
    with lock, open(os.path.join(a.dir, "watch.json"), "w") as f:
        for r in jobs.values():
            r = dict(r, running_pods=len(r["running_pods"]))
            f.write(json.dumps(r) + "\n")
    if not ok:
        sys.exit(f"kueue-jobs-watch: {sum(1 for x in jobs.values() if 'finished_ms' in x)} of "
                 f"{a.expect} workloads finished within {a.timeout_s} s")


def kueue_jobs_report(a):
    sub = {}
    with open(os.path.join(a.dir, "submit.json")) as f:
        for line in f:
            r = json.loads(line)
            sub[r["job"]] = r
    seen = {}
    with open(os.path.join(a.dir, "watch.json")) as f:
        for line in f:
            r = json.loads(line)
            seen[r["job"]] = r
    waits, running, finished = {}, {}, {}
    evicted, last = 0, None
    for job, s in sub.items():
        cls = job.split("/")[1].rsplit("-", 1)[0]
        w = seen.get(job, {})
        if "admitted_ms" in w:
            waits.setdefault(cls, []).append(w["admitted_ms"] - s["created_ms"])
        if "running_ms" in w:
            running.setdefault(cls, []).append(w["running_ms"] - s["created_ms"])
        reason = w.get("finished_reason", "unfinished")
        finished[reason] = finished.get(reason, 0) + 1
        evicted += w.get("evicted", 0)
        if "finished_ms" in w:
            last = w["finished_ms"] if last is None else max(last, w["finished_ms"])
    first = min(s["sent_ms"] for s in sub.values())
    out = summary_of(waits, (last - first) if last else 0)
    out["to_running"] = {cls: {"n": len(v), "p50_ms": pct(v, 50), "p99_ms": pct(v, 99)}
                         for cls, v in running.items()}
    out["finished"], out["evictions"] = finished, evicted
    out["label"] = "Kueue (manager, batch/Job)"
    json.dump(out, sys.stdout)


def kueue_jobs_reclaim(a):
    """gpuaas-reclaim's scenario with Jobs: in cohort 0, cq-0-1 borrows the
    whole cohort with 12 one-pod Jobs of 10 GPUs (low priority, grace G),
    then cq-0-0 submits a Job of 2 x 10 GPUs for its nominal 20. The figure
    is its create -> both its pods Running (Kueue evicts two borrowers, the
    Job controller deletes their pods, kwok ends them after their grace,
    Kueue admits the owner, kube-scheduler binds its pods)."""
    k = Kube()
    cohort_jobs = QUEUES * NOMINAL // 10

    sel = "labelSelector=gpuaas.bench%2Fclass%3Dreclaim"

    def jobs(ns):
        return k.get(f"/apis/batch/v1/namespaces/{ns}/jobs?{sel}")["items"]

    def pods(ns):
        return k.get(f"/api/v1/namespaces/{ns}/pods?{sel}")["items"]

    def wait_until(pred, timeout, what):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if pred():
                return
            time.sleep(0.05)
        sys.exit(f"kueue-jobs-reclaim: timed out waiting for {what}")

    def running(ns, n):
        return sum(1 for p in pods(ns) if p["status"].get("phase") == "Running"
                   and not p["metadata"].get("deletionTimestamp")) >= n

    def delete_all(ns):
        for j in jobs(ns):
            k.call("DELETE", f"/apis/batch/v1/namespaces/{ns}/jobs/{j['metadata']['name']}",
                   {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"},
                   ok=(200, 202, 404))

    lat = []
    for rnd in range(a.rounds):
        for i in range(cohort_jobs):
            k.create("/apis/batch/v1/namespaces/cq-0-1/jobs",
                     job_body(f"borrower-{rnd}-{i}", "reclaim", None, 50, a.grace_s, 1, 10))
        wait_until(lambda: running("cq-0-1", cohort_jobs), 120, "the borrower to fill the cohort")
        t0 = now_ms()
        k.create("/apis/batch/v1/namespaces/cq-0-0/jobs", job_body(f"owner-{rnd}", "reclaim", None, 1000, 1, 2, 10))
        wait_until(lambda: running("cq-0-0", 2), 120, "the owner's pods to run")
        lat.append(now_ms() - t0)
        delete_all("cq-0-1")
        delete_all("cq-0-0")
        wait_until(lambda: not pods("cq-0-0") and not pods("cq-0-1") and not jobs("cq-0-0")
                   and not jobs("cq-0-1"), 120, "the round's Jobs and pods to go")
    print(json.dumps({"rounds": len(lat), "grace_s": a.grace_s, "reclaim_ms": lat,
                      "p50_ms": pct(lat, 50), "max_ms": max(lat), "to": "pods Running"}))


def kube_requests(a):
    """The apiserver's request counters (apiserver_request_total) summed by
    verb and resource, written to OUT; with --since, what changed since that
    earlier file, printed with its total."""
    k = Kube()
    c = k.connect()
    c.request("GET", "/metrics", headers={"Authorization": "Bearer " + k.token})
    r = c.getresponse()
    text = r.read().decode()
    by = {}
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels, value = line[len("apiserver_request_total{"):].rsplit("} ", 1)
        kv = dict(x.split("=", 1) for x in labels.split(",") if "=" in x)
        kv = {key: v.strip('"') for key, v in kv.items()}
        res = "/".join(x for x in (kv.get("resource"), kv.get("subresource")) if x) or "-"
        key = f"{kv.get('verb')} {res} {kv.get('code')}"
        by[key] = by.get(key, 0) + int(float(value))
    with open(a.out, "w") as f:
        json.dump(by, f)
    if a.since:
        before = json.load(open(a.since))
        d = {key: v - before.get(key, 0) for key, v in by.items() if v - before.get(key, 0) > 0}
        d = dict(sorted(d.items(), key=lambda x: -x[1]))
        json.dump({"total": sum(d.values()), "by": d}, sys.stdout)


def kube_cleanup(a):
    """Deletes the namespaces kueue-jobs-setup made (their Jobs and pods go
    with them) and waits until they are gone."""
    k = Kube()
    sel = "labelSelector=gpuaas.bench%2Fkueue-jobs"
    for ns in k.get(f"/api/v1/namespaces?{sel}")["items"]:
        k.call("DELETE", f"/api/v1/namespaces/{ns['metadata']['name']}", ok=(200, 202, 404))
    end = time.monotonic() + a.timeout_s
    while k.get(f"/api/v1/namespaces?{sel}")["items"]:
        if time.monotonic() > end:
            sys.exit("kube-cleanup: the namespaces are still there")
        time.sleep(1)


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
    if "to_running" in k:  # Kueue with Jobs: a Job's create -> all its pods Running
        for cls, *_ in MIX:
            kc, gc = k["to_running"].get(cls, {}), g.get("to_running", {}).get(cls, {})
            rows.append((f"submit to all pods Running {cls} p50 / p99",
                         f"{f(kc.get('p50_ms'))} / {f(kc.get('p99_ms'))} ms",
                         f"{f(gc.get('p50_ms'))} / {f(gc.get('p99_ms'))} ms"))
    if kr or gr:
        if kr and "classes" not in kr:  # measured on pods, as gpuaas's
            ktxt = (f"{f(kr['p50_ms'])} / {f(kr['max_ms'])} ms (every pod of the owner Running, "
                    f"victims' grace {kr['grace_s']} s)")
        else:
            kc = (kr or {}).get("classes", {}).get("owner", {})
            ktxt = f"{f(kc.get('p50_ms'))} / {f(kc.get('max_ms'))} ms (admission, no grace)"
        rows.append(("owner's reclaim p50 / max", ktxt,
                     f"{f(gr['p50_ms'])} / {f(gr['max_ms'])} ms (every pod of the owner Running, victims' grace {gr['grace_s']} s)" if gr else "-"))
    rows += [("controller CPU seconds", f(k.get("cpu_s")), f(g.get("cpu_s"))),
             ("controller peak RSS", f(k.get("rss_mib"), " MiB"), f(g.get("rss_mib"), " MiB"))]
    # With Jobs, the controllers Kueue needs beside it, and the shared control
    # plane, during each side's mix.
    for name in ("kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd", "kwok"):
        kc, gc = k.get("cp_cpu_s", {}).get(name), g.get("cp_cpu_s", {}).get(name)
        if kc is not None or gc is not None:
            rows.append((f"{name} CPU seconds", f(kc), f(gc) if gc is not None else "-"))
    kq, gq = k.get("apiserver_requests"), g.get("apiserver_requests")
    if kq is not None or gq is not None:
        rows.append(("kube-apiserver requests", f(kq), f(gq)))
    if k.get("evictions") is not None:
        rows.append(("evictions (preempted Jobs / workloads)", f(k["evictions"]),
                     f(g.get("states", {}).get("preempted", 0))))
    print(f"| | {k.get('label', 'Kueue (minimalkueue)')} | gpuaas (kubernetes backend) |")
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
    p = sub.add_parser("kueue-jobs-setup"); p.add_argument("--scale", type=float, default=1.0)
    p = sub.add_parser("kueue-jobs-watch"); p.add_argument("dir"); p.add_argument("--expect", type=int, required=True)
    p.add_argument("--timeout-s", type=int, default=3600)
    p = sub.add_parser("kueue-jobs-submit"); p.add_argument("dir")
    p.add_argument("--scale", type=float, default=1.0); p.add_argument("--runtime-ms", default="1000,1000,1000")
    p = sub.add_parser("kueue-jobs-report"); p.add_argument("dir")
    p = sub.add_parser("kueue-jobs-reclaim")
    p.add_argument("--rounds", type=int, default=5); p.add_argument("--grace-s", type=int, default=1)
    p = sub.add_parser("kube-requests"); p.add_argument("out"); p.add_argument("--since")
    p = sub.add_parser("kube-cleanup"); p.add_argument("--timeout-s", type=int, default=600)
    p = sub.add_parser("table"); p.add_argument("kueue"); p.add_argument("gpuaas")
    p.add_argument("--kueue-reclaim"); p.add_argument("--gpuaas-reclaim")
    a = ap.parse_args()
    {"kueue-config": kueue_config, "kueue-reclaim-config": kueue_reclaim_config,
     "kueue-report": kueue_report, "gpuaas-setup": gpuaas_setup, "gpuaas-submit": gpuaas_submit,
     "gpuaas-report": gpuaas_report, "gpuaas-reclaim": gpuaas_reclaim, "table": table,
     "kueue-jobs-setup": kueue_jobs_setup, "kueue-jobs-watch": kueue_jobs_watch,
     "kueue-jobs-submit": kueue_jobs_submit, "kueue-jobs-report": kueue_jobs_report,
     "kueue-jobs-reclaim": kueue_jobs_reclaim, "kube-cleanup": kube_cleanup,
     "kube-requests": kube_requests}[a.cmd](a)


if __name__ == "__main__":
    main()
