# SPDX-License-Identifier: Apache-2.0
"""What schemathesis found, pinned as plain cases on the seeded world: a 405
carries the Allow header RFC 9110 requires, naming what the path offers;
list filters on an enum refuse an unknown value; filters on a time take an
RFC 3339 time."""
import json
import os
import tempfile

import pytest

import world


@pytest.fixture(scope="module")
def live():
    d = world.Daemon(os.environ["GPUAASD"], tempfile.mkdtemp(prefix="gpuaas-edges-"))
    try:
        c = world.Client(d.port)
        w = world.seed(c, d.admin_token)
        yield c, w
    finally:
        assert d.stop() == 0
        assert not d.sanitizer_lines(), "\n".join(d.sanitizer_lines())


@pytest.mark.parametrize("method,path,allow", [
    ("PUT", "/v1/whoami", "GET"),
    ("TRACE", "/healthz", "GET"),
    ("DELETE", "/v1/invoices/issue", "POST"),
    ("PUT", "/v1/projects", "GET, POST"),
    ("OPTIONS", "/v1/projects/1", "GET, PATCH, DELETE"),
    # read-only resources offer no POST, PATCH or DELETE
    ("OPTIONS", "/v1/audit", "GET"),
    ("POST", "/v1/audit", "GET"),
    ("PATCH", "/v1/events/1", "GET"),
    # role bindings and tokens are deleted, never changed
    ("PATCH", "/v1/role-bindings/1", "GET, DELETE"),
    ("PUT", "/v1/tokens/1", "GET, DELETE"),
])
def test_405_names_what_the_path_allows(live, method, path, allow):
    c, w = live
    status, headers, body = c.request(method, path, w["tokens"]["admin"])
    assert status == 405, body
    assert headers.get("allow") == allow, (headers, body)
    assert json.loads(body)["error"]["code"] == "method_not_allowed"


def test_enum_filter_refuses_an_unknown_value(live):
    c, w = live
    status, _, body = c.request("GET", "/v1/workloads?state=runing", w["tokens"]["admin"])
    assert status == 400, body
    assert json.loads(body)["error"]["detail"]["field"] == "state"
    status, _, body = c.request("GET", "/v1/workloads?state=running", w["tokens"]["admin"])
    assert status == 200 and json.loads(body)["items"], body


def test_time_filter_takes_an_rfc3339_time(live):
    c, w = live
    adm = w["tokens"]["admin"]
    price = c.json("GET", "/v1/prices/%d" % w["ids"]["price"], adm, want=200)
    status, _, body = c.request("GET", "/v1/prices?effective_from=" + price["effective_from"],
                                adm)
    assert status == 200, body
    assert [p["id"] for p in json.loads(body)["items"]] == [w["ids"]["price"], w["ids"]["price4"]]
    status, _, body = c.request("GET", "/v1/prices?effective_from=yesterday", adm)
    assert status == 400, body
