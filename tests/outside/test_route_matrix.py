# SPDX-License-Identifier: Apache-2.0
"""Route x role x tenant matrix, generated from /v1/openapi.json.

Every (method, path) of the document must have a row in ROWS below and
every row must be in the document (events with text/event-stream is a row
of its own). Each row is called as the admin and as the org-admin,
project-admin, member and viewer of each of two organizations (world.py),
on an object of the caller's tenant and of the other one. Each cell checks
the status against the row (written from docs/api.md, never from the
server's answers) and, for everyone but the admin, that the body names no
object of the other tenant: neither its tag ("alpha" / "zulu") nor its
project or organization id under a project_id / org_id key.

All mismatches are printed, one per line, and the test fails once at the end.
"""
import itertools
import json
import os
import tempfile
import time

import pytest

import world

ROLES = ["org-admin", "project-admin", "member", "viewer"]
ADMIN_OK = {200, 201, 202, 204, 400, 404, 409}  # authorized: anything but 401/403/5xx
NOT_ADMIN = 403
counter = itertools.count(1)


def callers():
    yield "admin", None
    for t in ("A", "B"):
        for r in ROLES:
            yield r, t


def other(t):
    return "B" if t == "A" else "A"


# ---- rows: (method, path) -> function(ctx) giving (request, expected) ----
# ctx: role, tenant (the caller's, None for the admin), target (the tenant
# whose object the cell names), w (the world), c (the client), adm (token).
# expected: an int, or a set of ints.

# A body that names an object the caller cannot see gets what naming one that
# does not exist gets: 400, "field 'project_id': no project with id N".
REF = 400


def vis(ctx, ok, hidden=404):
    """ok when the object is of the caller's tenant, else hidden."""
    return ok if ctx["role"] == "admin" or ctx["tenant"] == ctx["target"] else hidden


def at_least(ctx, least, ok, denied=403):
    order = ["viewer", "member", "project-admin", "org-admin", "admin"]
    return ok if order.index(ctx["role"]) >= order.index(least) else denied


def tid(ctx, name):
    return ctx["w"]["ids"]["%s:%s" % (ctx["target"], name)]


def get_list(path):
    return lambda ctx: (("GET", path, None), 200)


def get_item(res, name):
    def row(ctx):
        return ("GET", "/v1/%s/%d" % (res, tid(ctx, name)), None), vis(ctx, 200)
    return row


def get_global(res, name):
    return lambda ctx: (("GET", "/v1/%s/%d" % (res, ctx["w"]["ids"][name]), None), 200)


def admin_only(method, path, body=None, admin_want=None):
    def row(ctx):
        if ctx["role"] == "admin":
            return (method, path, body), admin_want or ADMIN_OK
        return (method, path, body), NOT_ADMIN
    return row


def fresh(ctx, res, body):
    """A throwaway object made by the admin for a cell that deletes it."""
    return ctx["c"].json("POST", "/v1/" + res, ctx["adm"], body, 201)["id"]


def tag(ctx):
    return world.ORGS[ctx["target"]]


def uniq(ctx, what):
    return "%s-%s-%d" % (tag(ctx), what, next(counter))


def org_create(ctx):
    body = {"name": uniq(ctx, "org"), "parent_id": tid(ctx, "org")}
    own = at_least(ctx, "org-admin", 201) if ctx["role"] != "admin" else 201
    return ("POST", "/v1/organizations", body), vis(ctx, own, REF)


def org_patch(ctx):
    own = at_least(ctx, "org-admin", 200) if ctx["role"] != "admin" else 200
    return ("PATCH", "/v1/organizations/%d" % tid(ctx, "org"),
            {"display_name": tag(ctx) + " display"}), vis(ctx, own)


def org_delete(ctx):
    oid = fresh(ctx, "organizations", {"name": uniq(ctx, "gone"), "parent_id": tid(ctx, "org")})
    # project-level roles do not see a child organization with no project of theirs
    own = 204 if ctx["role"] in ("admin", "org-admin") else 404
    return ("DELETE", "/v1/organizations/%d" % oid, None), vis(ctx, own)


def project_create(ctx):
    own = at_least(ctx, "org-admin", 201) if ctx["role"] != "admin" else 201
    return ("POST", "/v1/projects", {"org_id": tid(ctx, "org"), "name": uniq(ctx, "p")}), \
        vis(ctx, own, REF)


def project_patch(ctx):
    own = at_least(ctx, "project-admin", 200) if ctx["role"] != "admin" else 200
    return ("PATCH", "/v1/projects/%d" % tid(ctx, "project"),
            {"description": tag(ctx) + " project"}), vis(ctx, own)


def project_delete(ctx):
    pid = fresh(ctx, "projects", {"org_id": tid(ctx, "org"), "name": uniq(ctx, "gone")})
    own = 204 if ctx["role"] in ("admin", "org-admin") else 404
    return ("DELETE", "/v1/projects/%d" % pid, None), vis(ctx, own)


def user_get(ctx):
    # the tenant's member: seen by themselves, the admin, and project-admins or more over them
    own = 200 if ctx["role"] in ("admin", "org-admin", "project-admin", "member") else 404
    return ("GET", "/v1/users/%d" % tid(ctx, "member:user"), None), vis(ctx, own)


def user_patch(ctx):
    want = 200 if ctx["role"] == "admin" else vis(
        ctx, 403 if ctx["role"] != "viewer" else 404)
    return ("PATCH", "/v1/users/%d" % tid(ctx, "member:user"),
            {"display_name": tag(ctx) + " member"}), want


def user_delete(ctx):
    uid = fresh(ctx, "users", {"name": uniq(ctx, "u")})
    return ("DELETE", "/v1/users/%d" % uid, None), 204 if ctx["role"] == "admin" else 404


def user_create(ctx):
    return ("POST", "/v1/users", {"name": uniq(ctx, "nu")}), 201 if ctx["role"] == "admin" \
        else 403


def binding_get(ctx):
    own = 200 if ctx["role"] != "viewer" else 404
    return ("GET", "/v1/role-bindings/%d" % tid(ctx, "member:binding"), None), vis(ctx, own)


def binding_create(ctx):
    # A binding may name only a user the caller sees (issue 14, finding 11): one the admin
    # already made a viewer of the project, which its project-admins and org-admins see.
    # A user the caller cannot see reads as no user at all (400, before any role check).
    uid = fresh(ctx, "users", {"name": uniq(ctx, "bu")})
    fresh(ctx, "role-bindings", {"user_id": uid, "role": "viewer",
                                 "project_id": tid(ctx, "project")})
    body = {"user_id": uid, "role": "member", "project_id": tid(ctx, "project")}
    own = at_least(ctx, "project-admin", 201, REF) if ctx["role"] != "admin" else 201
    return ("POST", "/v1/role-bindings", body), vis(ctx, own, REF)


def binding_delete(ctx):
    uid = fresh(ctx, "users", {"name": uniq(ctx, "du")})
    bid = fresh(ctx, "role-bindings", {"user_id": uid, "role": "viewer",
                                       "project_id": tid(ctx, "project")})
    own = 204 if ctx["role"] in ("admin", "org-admin", "project-admin") else 404
    return ("DELETE", "/v1/role-bindings/%d" % bid, None), vis(ctx, own)


def token_get(ctx):
    own = 200 if ctx["role"] in ("admin", "member") else 404
    return ("GET", "/v1/tokens/%d" % tid(ctx, "member:token"), None), vis(ctx, own)


def caller_user(ctx):
    if ctx["role"] == "admin":
        return ctx["w"]["ids"]["%s:member:user" % ctx["target"]]
    return ctx["w"]["ids"]["%s:%s:user" % (ctx["tenant"], ctx["role"])]


def token_create(ctx):
    # for yourself (own tenant), or for the other tenant's member (not visible)
    uid = caller_user(ctx) if ctx["role"] == "admin" or ctx["tenant"] == ctx["target"] \
        else ctx["w"]["ids"]["%s:member:user" % ctx["target"]]
    # a token for someone else: only the admin; the other tenant's member is a user the
    # caller cannot see, so it reads as no user at all (400)
    return ("POST", "/v1/tokens", {"user_id": uid, "name": uniq(ctx, "t")}), vis(ctx, 201, REF)


def token_delete(ctx):
    if ctx["role"] == "admin" or ctx["tenant"] == ctx["target"]:
        uid = caller_user(ctx)
    else:
        uid = ctx["w"]["ids"]["%s:member:user" % ctx["target"]]
    t = ctx["c"].json("POST", "/v1/tokens", ctx["adm"], {"user_id": uid, "name": "gone"}, 201)
    return ("DELETE", "/v1/tokens/%d" % t["id"], None), vis(ctx, 204)


def scoped_admin_patch(res, name, body):
    """An object of the tenant that only the admin may change; its viewers see it."""
    def row(ctx):
        want = 200 if ctx["role"] == "admin" else vis(ctx, 403)
        return ("PATCH", "/v1/%s/%d" % (res, tid(ctx, name)), body(ctx)), want
    return row


def pool_create(ctx):
    body = {"name": uniq(ctx, "pool"), "owner_project_id": tid(ctx, "project")}
    return ("POST", "/v1/pools", body), 201 if ctx["role"] == "admin" else vis(ctx, 403, REF)


def pool_delete(ctx):
    pid = fresh(ctx, "pools", {"name": uniq(ctx, "gpool"), "owner_project_id": tid(ctx, "project")})
    return ("DELETE", "/v1/pools/%d" % pid, None), 204 if ctx["role"] == "admin" \
        else vis(ctx, 403)


def quota_create(ctx):
    pid = fresh(ctx, "projects", {"org_id": tid(ctx, "org"), "name": uniq(ctx, "qp")})
    body = {"project_id": pid, "gpu_class_id": ctx["w"]["ids"]["gpu_class"], "limit_milli": 1000}
    # a new project: project-level roles of the tenant do not see it
    own = 201 if ctx["role"] in ("admin", "org-admin") else REF
    return ("POST", "/v1/quotas", body), vis(ctx, own, REF)


def quota_patch(ctx):
    own = at_least(ctx, "org-admin", 200) if ctx["role"] != "admin" else 200
    return ("PATCH", "/v1/quotas/%d" % tid(ctx, "quota"), {"limit_milli": 16000}), vis(ctx, own)


def quota_delete(ctx):
    pid = fresh(ctx, "projects", {"org_id": tid(ctx, "org"), "name": uniq(ctx, "dq")})
    qid = fresh(ctx, "quotas", {"project_id": pid, "gpu_class_id": ctx["w"]["ids"]["gpu_class"],
                                "limit_milli": 1000})
    own = 204 if ctx["role"] in ("admin", "org-admin") else 404
    return ("DELETE", "/v1/quotas/%d" % qid, None), vis(ctx, own)


def orgquota_create(ctx):
    oid = fresh(ctx, "organizations", {"name": uniq(ctx, "oq"), "parent_id": tid(ctx, "org")})
    body = {"org_id": oid, "gpu_class_id": ctx["w"]["ids"]["gpu_class"], "limit_milli": 1000}
    if ctx["role"] == "admin":
        return ("POST", "/v1/org-quotas", body), 201
    return ("POST", "/v1/org-quotas", body), vis(ctx, 403 if ctx["role"] == "org-admin" else REF,
                                                 REF)


def orgquota_delete(ctx):
    oid = fresh(ctx, "organizations", {"name": uniq(ctx, "oqd"), "parent_id": tid(ctx, "org")})
    qid = fresh(ctx, "org-quotas", {"org_id": oid, "gpu_class_id": ctx["w"]["ids"]["gpu_class"],
                                    "limit_milli": 1000})
    if ctx["role"] == "admin":
        return ("DELETE", "/v1/org-quotas/%d" % qid, None), 204
    return ("DELETE", "/v1/org-quotas/%d" % qid, None), \
        vis(ctx, 403 if ctx["role"] == "org-admin" else 404)


def budget_create(ctx):
    body = {"project_id": tid(ctx, "project"), "gpu_hours": 100 + next(counter)}
    own = at_least(ctx, "org-admin", 201) if ctx["role"] != "admin" else 201
    return ("POST", "/v1/budgets", body), vis(ctx, own, REF)


def budget_patch(ctx):
    own = at_least(ctx, "org-admin", 200) if ctx["role"] != "admin" else 200
    return ("PATCH", "/v1/budgets/%d" % tid(ctx, "budget"), {"money_micros": 900000000000}), \
        vis(ctx, own)


def budget_delete(ctx):
    bid = fresh(ctx, "budgets", {"project_id": tid(ctx, "project"),
                                 "gpu_hours": 1000 + next(counter)})
    own = at_least(ctx, "org-admin", 204) if ctx["role"] != "admin" else 204
    return ("DELETE", "/v1/budgets/%d" % bid, None), vis(ctx, own)


def workload_submit(ctx):
    body = {"project_id": tid(ctx, "project"), "flavor_id": ctx["w"]["ids"]["flavor1"],
            "name": uniq(ctx, "w"), "priority_class": "owned", "duration_s": 1}
    own = at_least(ctx, "member", 201) if ctx["role"] != "admin" else 201
    return ("POST", "/v1/workloads", body), vis(ctx, own, REF)


def wl(ctx, name):
    return ctx["w"]["ids"]["%s-%s" % (tag(ctx), name)]


def workload_cancel(ctx):
    # finished work: 409 for whoever may cancel it
    own = at_least(ctx, "member", 409) if ctx["role"] != "admin" else 409
    return ("POST", "/v1/workloads/%d/cancel" % wl(ctx, "done"), None), vis(ctx, own)


def workload_hold(ctx):
    # finished work: 409 for whoever may hold it (only queued work can be)
    own = at_least(ctx, "member", 409) if ctx["role"] != "admin" else 409
    return ("POST", "/v1/workloads/%d/hold" % wl(ctx, "done"), None), vis(ctx, own)


def workload_release(ctx):
    own = at_least(ctx, "member", 409) if ctx["role"] != "admin" else 409
    return ("POST", "/v1/workloads/%d/release" % wl(ctx, "done"), None), vis(ctx, own)


def workload_logs(ctx):
    return ("GET", "/v1/workloads/%d/logs" % wl(ctx, "done"), None), vis(ctx, 200)


def workload_get(ctx):
    return ("GET", "/v1/workloads/%d" % wl(ctx, "done"), None), vis(ctx, 200)


def first_id(ctx, path):
    items = ctx["c"].json("GET", path, ctx["adm"], want=200)["items"]
    return items[0]["id"] if items else 999999


def by_project(res, key="project_id"):
    def row(ctx):
        i = first_id(ctx, "/v1/%s?%s=%d" % (res, key, tid(ctx, "project")))
        if i == 999999:  # none in this world (budget alerts: no budget was crossed)
            return ("GET", "/v1/%s/%d" % (res, i), None), 404
        return ("GET", "/v1/%s/%d" % (res, i), None), vis(ctx, 200)
    return row


def preemption_get(ctx):
    # zulu reclaimed from alpha: one entry, read by both parties (finding 12), each with the
    # other's parts redacted (the leak check covers that); only zulu's list names it by project
    i = first_id(ctx, "/v1/preemptions?project_id=%d" % tid(ctx, "project"))
    if i == 999999:
        i = first_id(ctx, "/v1/preemptions?project_id=%d" % ctx["w"]["ids"]["B:project"])
        return ("GET", "/v1/preemptions/%d" % i, None), 200
    return ("GET", "/v1/preemptions/%d" % i, None), 200


def nonexistent(method, path, body=None):
    """An object that does not exist (no invoice can be issued on a fresh store)."""
    def row(ctx):
        want = 404 if ctx["role"] == "admin" else {403, 404}
        return (method, path, body), want
    return row


def invoice_read(tail=""):
    """An issued invoice of the target's organization (world.py imports last
    month's work and issues it): its org viewers read it, everyone else gets 404."""
    def row(ctx):
        fmt = ""
        if tail == "/export":
            fmt = "?format=" + ("json", "csv", "html")[next(counter) % 3]
        own = 200 if ctx["role"] in ("admin", "org-admin") else 404
        return ("GET", "/v1/invoices/%d%s%s" % (tid(ctx, "invoice"), tail, fmt), None), \
            vis(ctx, own)
    return row


def invoice_change(tail, body, admin_want):
    """Pay or credit a real invoice of either tenant: only the admin may (403 before
    any lookup, so no one learns whether the other tenant's invoice exists)."""
    def row(ctx):
        want = admin_want if ctx["role"] == "admin" else 403
        return ("POST", "/v1/invoices/%d%s" % (tid(ctx, "invoice"), tail), body), want
    return row


def history_import(ctx):
    """An hour of the target tenant's work imported as history, early this month:
    only the admin may (201; 409 when no GPU was free then; 400 in a month's first hour)."""
    t = time.gmtime()
    start = "%04d-%02d-01T00:%02d:00Z" % (t.tm_year, t.tm_mon, next(counter) % 50)
    body = {"workloads": [{"project_id": tid(ctx, "project"), "name": uniq(ctx, "hist"),
                           "flavor_id": ctx["w"]["ids"]["flavor1"], "started_at": start,
                           "finished_at": start[:14] + "59:59Z"}]}
    return ("POST", "/v1/history", body), ADMIN_OK if ctx["role"] == "admin" else NOT_ADMIN


def whatif(ctx):
    """What-if on this month's record with one more guaranteed GPU for the target's project
    (docs/api.md, What-if): admins, and organization admins for their own projects (200);
    another tenant's project reads as one that does not exist (400); project-level roles may
    not run one (403), whatever the body names."""
    t = time.gmtime()
    body = {"period": "%04d-%02d" % (t.tm_year, t.tm_mon),
            "changes": [{"kind": "quota", "project_id": tid(ctx, "project"),
                         "gpu_class_id": ctx["w"]["ids"]["gpu_class"], "gpus": 1}]}
    if ctx["role"] in ("project-admin", "member", "viewer"):
        return ("POST", "/v1/whatif", body), 403
    return ("POST", "/v1/whatif", body), vis(ctx, 200, REF)


def org_view(path_fmt):
    """Org viewers: the org-admin. Project-level roles see the organization
    itself but hold no role on it, so its other objects are not theirs."""
    def row(ctx):
        own = 200 if ctx["role"] in ("admin", "org-admin") else 404
        return ("GET", path_fmt % tid(ctx, "org"), None), vis(ctx, own)
    return row


def inventory_history(ctx):
    return ("GET", "/v1/inventory/history?workload=%d" % wl(ctx, "run"), None), vis(ctx, 200)


def events_stream(ctx):
    return ("GET", "/v1/events?project_id=%d&after=0" % tid(ctx, "project"), "stream"), \
        vis(ctx, 200, {200, 403, 404})


ROWS = {
    ("get", "/healthz"): get_list("/healthz"),
    ("get", "/v1/openapi.json"): get_list("/v1/openapi.json"),
    ("get", "/v1/whoami"): get_list("/v1/whoami"),
    ("get", "/metrics"): admin_only("GET", "/metrics", admin_want=200),
    ("get", "/v1/capacity"): get_list("/v1/capacity"),
    ("get", "/v1/usage"): get_list("/v1/usage"),
    ("get", "/v1/inventory"): get_list("/v1/inventory"),
    ("get", "/v1/inventory/export"): get_list("/v1/inventory/export"),
    ("get", "/v1/inventory/history"): inventory_history,
    ("post", "/v1/inventory/import"): admin_only("POST", "/v1/inventory/import", {}),
    ("get", "/v1/cost"): get_list("/v1/cost"),
    ("get", "/v1/invoices/draft"): org_view("/v1/invoices/draft?org_id=%d"),
    # last month is issued already (world.py): 409 for the admin, 403 for anyone else
    ("post", "/v1/invoices/issue"): lambda ctx: (
        ("POST", "/v1/invoices/issue", {"org_id": tid(ctx, "org"), "period": ctx["w"]["period"]}),
        409 if ctx["role"] == "admin" else 403),
    ("post", "/v1/history"): history_import,
    ("post", "/v1/whatif"): whatif,
    ("get", "/v1/ledger/verify"): admin_only("GET", "/v1/ledger/verify", admin_want=200),
    ("get", "/v1/organizations"): get_list("/v1/organizations"),
    ("post", "/v1/organizations"): org_create,
    ("get", "/v1/organizations/{id}"): get_item("organizations", "org"),
    ("patch", "/v1/organizations/{id}"): org_patch,
    ("delete", "/v1/organizations/{id}"): org_delete,
    ("get", "/v1/projects"): get_list("/v1/projects"),
    ("post", "/v1/projects"): project_create,
    ("get", "/v1/projects/{id}"): get_item("projects", "project"),
    ("patch", "/v1/projects/{id}"): project_patch,
    ("delete", "/v1/projects/{id}"): project_delete,
    ("get", "/v1/users"): get_list("/v1/users"),
    ("post", "/v1/users"): user_create,
    ("get", "/v1/users/{id}"): user_get,
    ("patch", "/v1/users/{id}"): user_patch,
    ("delete", "/v1/users/{id}"): user_delete,
    ("get", "/v1/role-bindings"): get_list("/v1/role-bindings"),
    ("post", "/v1/role-bindings"): binding_create,
    ("get", "/v1/role-bindings/{id}"): binding_get,
    ("delete", "/v1/role-bindings/{id}"): binding_delete,
    ("get", "/v1/tokens"): get_list("/v1/tokens"),
    ("post", "/v1/tokens"): token_create,
    ("get", "/v1/tokens/{id}"): token_get,
    ("delete", "/v1/tokens/{id}"): token_delete,
    ("get", "/v1/pools"): get_list("/v1/pools"),
    ("post", "/v1/pools"): pool_create,
    ("get", "/v1/pools/{id}"): get_item("pools", "pool"),
    ("patch", "/v1/pools/{id}"): scoped_admin_patch(
        "pools", "pool", lambda ctx: {"cost_per_gpu_hour_micros": 2000000}),
    ("delete", "/v1/pools/{id}"): pool_delete,
    ("get", "/v1/quotas"): get_list("/v1/quotas"),
    ("post", "/v1/quotas"): quota_create,
    ("get", "/v1/quotas/{id}"): get_item("quotas", "quota"),
    ("patch", "/v1/quotas/{id}"): quota_patch,
    ("delete", "/v1/quotas/{id}"): quota_delete,
    ("get", "/v1/org-quotas"): get_list("/v1/org-quotas"),
    ("post", "/v1/org-quotas"): orgquota_create,
    ("get", "/v1/org-quotas/{id}"): lambda ctx: (
        ("GET", "/v1/org-quotas/%d" % tid(ctx, "org-quota"), None),
        vis(ctx, 200 if ctx["role"] in ("admin", "org-admin") else 404)),
    ("patch", "/v1/org-quotas/{id}"): lambda ctx: (
        ("PATCH", "/v1/org-quotas/%d" % tid(ctx, "org-quota"), {"limit_milli": 16000}),
        200 if ctx["role"] == "admin" else vis(ctx, 403 if ctx["role"] == "org-admin" else 404)),
    ("delete", "/v1/org-quotas/{id}"): orgquota_delete,
    ("get", "/v1/audit"): admin_only("GET", "/v1/audit", admin_want=200),
    ("get", "/v1/audit/{id}"): lambda ctx: (("GET", "/v1/audit/1", None),
                                            200 if ctx["role"] == "admin" else 404),
    ("get", "/v1/workloads"): get_list("/v1/workloads"),
    ("post", "/v1/workloads"): workload_submit,
    ("get", "/v1/workloads/{id}"): workload_get,
    ("get", "/v1/workloads/{id}/logs"): workload_logs,
    ("post", "/v1/workloads/{id}/cancel"): workload_cancel,
    ("post", "/v1/workloads/{id}/hold"): workload_hold,
    ("post", "/v1/workloads/{id}/release"): workload_release,
    ("get", "/v1/allocations"): get_list("/v1/allocations"),
    ("get", "/v1/allocations/{id}"): by_project("allocations"),
    ("get", "/v1/events"): get_list("/v1/events"),
    ("get", "/v1/events", "text/event-stream"): events_stream,
    ("get", "/v1/events/{id}"): by_project("events"),
    ("get", "/v1/preemptions"): get_list("/v1/preemptions"),
    ("get", "/v1/preemptions/{id}"): preemption_get,
    ("get", "/v1/prices"): get_list("/v1/prices"),
    ("get", "/v1/prices/{id}"): get_global("prices", "price"),
    ("get", "/v1/usage-records"): get_list("/v1/usage-records"),
    ("get", "/v1/usage-records/{id}"): by_project("usage-records"),
    ("get", "/v1/invoices"): get_list("/v1/invoices"),
    ("get", "/v1/invoices/{id}"): invoice_read(),
    # rows run in path order: credit (one cent, 201), then pay (issued -> paid, 200)
    ("post", "/v1/invoices/{id}/pay"): invoice_change("/pay", None, 200),
    ("post", "/v1/invoices/{id}/credit"): invoice_change(
        "/credit", {"reason": "goodwill", "amount_micros": 10000}, 201),
    ("get", "/v1/invoices/{id}/export"): invoice_read("/export"),
    ("get", "/v1/invoices/{id}/verify"): invoice_read("/verify"),
    ("get", "/v1/budgets"): get_list("/v1/budgets"),
    ("post", "/v1/budgets"): budget_create,
    ("get", "/v1/budgets/{id}"): get_item("budgets", "budget"),
    ("patch", "/v1/budgets/{id}"): budget_patch,
    ("delete", "/v1/budgets/{id}"): budget_delete,
    ("get", "/v1/budget-alerts"): get_list("/v1/budget-alerts"),
    ("get", "/v1/budget-alerts/{id}"): by_project("budget-alerts"),
    ("get", "/v1/inventory-items"): admin_only("GET", "/v1/inventory-items", admin_want=200),
    ("get", "/v1/inventory-items/{id}"): nonexistent("GET", "/v1/inventory-items/999999"),
}

# The global catalog: everyone reads, only the admin writes. Valid bodies,
# so that what is checked is the role, not the input.
def catalog_body(ctx, res):
    ids = ctx["w"]["ids"]
    n = next(counter)
    if res == "clusters":
        return {"name": "cl-%d" % n, "backend": "sim"}
    if res == "gpu-classes":
        return {"name": "gc-%d" % n}
    if res == "nodes":
        return {"cluster_id": ids["cluster"], "name": "nd-%d" % n}
    if res == "gpus":
        node = fresh(ctx, "nodes", {"cluster_id": ids["cluster"], "name": "gn-%d" % n})
        return {"node_id": node, "index": 0, "gpu_class_id": ids["gpu_class"],
                "uuid": "GPU-%08d" % n}
    if res == "flavors":
        return {"name": "fl-%d" % n, "gpu_class_id": ids["gpu_class"], "gpu_milli": 1000}
    return {"flavor_id": ids["flavor1"], "currency": "EUR", "price_per_hour_micros": 3600000,
            "effective_from": "2031-%02d-01T00:00:00Z" % (1 + n % 12)}


def catalog_create(res):
    return lambda ctx: (("POST", "/v1/" + res, catalog_body(ctx, res)),
                        201 if ctx["role"] == "admin" else 403)


# A field each may change harmlessly.
CATALOG_PATCH = {"clusters": {"description": "x"}, "flavors": {"description": "x"},
                 "gpu-classes": {"memory_mib": 81920}, "nodes": {"cpu_milli": 64000},
                 "gpus": {"memory_mib": 81920}}


def catalog_patch(res):
    def row(ctx):
        i = fresh(ctx, res, catalog_body(ctx, res))
        return ("PATCH", "/v1/%s/%d" % (res, i), CATALOG_PATCH[res]), \
            200 if ctx["role"] == "admin" else 403
    return row


def catalog_delete(res):
    def row(ctx):
        i = fresh(ctx, res, catalog_body(ctx, res))
        return ("DELETE", "/v1/%s/%d" % (res, i), None), 204 if ctx["role"] == "admin" else 403
    return row


for res in ("clusters", "nodes", "gpu-classes", "gpus", "flavors"):
    ROWS[("get", "/v1/" + res)] = get_list("/v1/" + res)
    ROWS[("get", "/v1/%s/{id}" % res)] = lambda ctx, res=res: (("GET", "/v1/%s/1" % res, None),
                                                                200)
    ROWS[("post", "/v1/" + res)] = catalog_create(res)
    ROWS[("patch", "/v1/%s/{id}" % res)] = catalog_patch(res)
    ROWS[("delete", "/v1/%s/{id}" % res)] = catalog_delete(res)
ROWS[("post", "/v1/prices")] = catalog_create("prices")

# Routes whose answers legitimately name the other tenant: the inventory
# shows a pool's owner to those who may borrow it (docs/api.md, Inventory).
MAY_NAME_LENDER = {("get", "/v1/inventory"), ("get", "/v1/inventory/export"),
                   ("get", "/v1/inventory/history")}
ID_KEYS = {"project_id": "project", "owner_project_id": "project", "org_id": "org",
           "owner_org_id": "org"}


def leaks(body, ctx, key):
    """What in body names the other tenant, as a list of strings."""
    if ctx["role"] == "admin":
        return []
    o = other(ctx["tenant"])
    found = []
    text = body
    if key in MAY_NAME_LENDER:
        for n in ("pool", "proj", "org"):
            text = text.replace("%s-%s" % (world.ORGS[o], n), "")
    if world.ORGS[o] in text:
        i = text.index(world.ORGS[o])
        found.append("names '%s': ...%s..." % (world.ORGS[o], text[max(0, i - 80):i + 40]))
    try:
        doc = json.loads(body)
    except ValueError:
        return found
    foreign = {"project": ctx["w"]["ids"][o + ":project"], "org": ctx["w"]["ids"][o + ":org"]}

    def walk(v, path):
        if isinstance(v, dict):
            for k, x in v.items():
                if k in ID_KEYS and x == foreign[ID_KEYS[k]] and key not in MAY_NAME_LENDER:
                    found.append("%s.%s = %s (the other tenant's %s)" % (path, k, x, ID_KEYS[k]))
                walk(x, path + "." + k)
        elif isinstance(v, list):
            for i, x in enumerate(v):
                walk(x, "%s[%d]" % (path, i))
    walk(doc, "$")
    return found


@pytest.fixture(scope="module")
def live():
    d = world.Daemon(os.environ["GPUAASD"], tempfile.mkdtemp(prefix="gpuaas-matrix-"))
    try:
        c = world.Client(d.port)
        w = world.seed(c, d.admin_token)
        yield d, c, w
    finally:
        rc = d.stop()
        assert rc == 0, "gpuaasd exited with %s on SIGTERM" % rc
        assert not d.sanitizer_lines(), "sanitizer report:\n" + "\n".join(d.sanitizer_lines())


def document_keys(c):
    status, _, text = c.request("GET", "/v1/openapi.json")
    assert status == 200
    keys = set()
    for path, item in json.loads(text)["paths"].items():
        for method in item:
            if method != "parameters":
                keys.add((method, path))
    keys.add(("get", "/v1/events", "text/event-stream"))
    return keys


def test_every_route_has_a_row_and_every_row_a_route(live):
    _, c, _ = live
    keys = document_keys(c)
    missing = sorted(keys - set(ROWS))
    extra = sorted(set(ROWS) - keys)
    assert not missing, "routes of the document without a row: %s" % missing
    assert not extra, "rows for routes the document lacks: %s" % extra


def want_str(want):
    return "/".join(str(x) for x in sorted(want)) if isinstance(want, set) else str(want)


def test_matrix(live):
    d, c, w = live
    mismatches = []
    cells = 0
    for key in sorted(ROWS, key=lambda k: (k[1], k[0], len(k))):
        for role, tenant in callers():
            for target in ("A", "B"):
                ctx = {"role": role, "tenant": tenant, "target": target, "w": w, "c": c,
                       "adm": w["tokens"]["admin"]}
                (method, path, body), want = ROWS[key](ctx)
                token = w["tokens"]["admin" if role == "admin" else "%s:%s" % (tenant, role)]
                if key[1] in ("/healthz", "/v1/openapi.json"):
                    token = None
                stream = body == "stream"
                headers = {"Accept": "text/event-stream"} if stream else None
                status, _, text = c.request(method, path, token, None if stream else body,
                                            headers=headers, stream=stream)
                cells += 1
                who = role if role == "admin" else "%s(%s)" % (role, world.ORGS[tenant])
                ok = status in want if isinstance(want, set) else status == want
                if not ok:
                    mismatches.append("MISMATCH %s %s as %s on %s's object: want %s, got %d %s"
                                      % (method, path, who, world.ORGS[target], want_str(want),
                                         status, text[:160].replace("\n", " ")))
                if status < 300:
                    for leak in leaks(text, ctx, key):
                        mismatches.append("LEAK %s %s as %s: %s" % (method, path, who, leak))
                if not d.alive():
                    pytest.fail("gpuaasd died at %s %s as %s" % (method, path, who))
    print("%d cells, %d mismatches" % (cells, len(mismatches)))
    for m in mismatches:
        print(m)
    assert not mismatches, "%d of %d cells disagree with the table (listed above)" % (
        len(mismatches), cells)
