# SPDX-License-Identifier: Apache-2.0
"""schemathesis against the live daemon, once per role, each on a freshly
seeded world (world.py): the admin, and the org-admin, project-admin,
member and viewer of organization A, each with its own token. Every check
schemathesis has (--checks all) on every operation of /v1/openapi.json: no
5xx, no reset connection, every response as the document says. Afterwards
the daemon must still answer /healthz, exit cleanly on SIGTERM and have
printed no sanitizer report.

Each role runs in two passes with the same token, first every operation but
DELETE, then DELETE alone: a caller may revoke its own token, which would
turn every later request into a 401 and test nothing.

Bounded and reproducible: a fixed seed, few examples per operation, one
worker. Prints each run's summary; exits non-zero on any failure.
Usage: GPUAASD=... run_schemathesis.py [max-examples]
"""
import os
import subprocess
import sys
import tempfile

import world

SEED = "20261201"
ROLES = ["viewer", "member", "project-admin", "org-admin", "admin"]
SCHEMATHESIS = os.path.join(os.path.dirname(sys.executable), "schemathesis")
CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "schemathesis.toml")


def summary(out):
    """The part of schemathesis' output worth printing: failures and summary."""
    i = out.find("=== FAILURES ===")
    if i < 0:
        i = out.find("=== SUMMARY ===")
    j = out.find("=== WARNINGS ===")
    k = out.find("=== SUMMARY ===")
    if i < 0:
        return out[-4000:]
    text = out[i:j] + out[k:] if 0 <= i < j < k else out[i:]
    return text[-20000:]


def run_role(role, examples):
    d = world.Daemon(os.environ["GPUAASD"], tempfile.mkdtemp(prefix="gpuaas-st-"))
    problems = []
    try:
        c = world.Client(d.port)
        w = world.seed(c, d.admin_token)
        token = w["tokens"]["admin" if role == "admin" else "A:" + role]
        for name, select in (("all but DELETE", ["--exclude-method", "DELETE"]),
                             ("DELETE", ["--include-method", "DELETE"])):
            cmd = [SCHEMATHESIS, "--config-file", CONFIG, "run", d.url + "/v1/openapi.json",
                   "-H", "Authorization: Bearer " + token, "--checks", "all",
                   "--seed", SEED, "--generation-deterministic", "--max-examples", str(examples),
                   "--phases", "examples,coverage,fuzzing", "--workers", "1",
                   "--request-timeout", "30", "--no-shrink", "--no-color", "--suppress-health-check", "all"] + select
            # in the daemon's directory: schemathesis leaves its cache where it runs
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               cwd=d.dir)
            print("==== schemathesis as %s, %s (exit %d)" % (role, name, p.returncode))
            print(summary(p.stdout))
            if p.returncode != 0:
                problems.append("%s, %s: schemathesis exit %d" % (role, name, p.returncode))
            if not d.alive():
                problems.append("%s: gpuaasd died" % role)
                break
            status, _, _ = c.request("GET", "/healthz")
            if status != 200:
                problems.append("%s: /healthz answered %d afterwards" % (role, status))
    finally:
        rc = d.stop()
        if rc != 0:
            problems.append("%s: gpuaasd exited with %s on SIGTERM" % (role, rc))
        for line in d.sanitizer_lines():
            problems.append("%s: sanitizer: %s" % (role, line))
        if problems:
            print(d.log_text()[-4000:])
    return problems


def main():
    examples = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    problems = []
    for role in ROLES:
        problems += run_role(role, examples)
    for p in problems:
        print("FAIL:", p)
    print("schemathesis: %d roles, %d problems" % (len(ROLES), len(problems)))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
