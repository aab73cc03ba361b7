# SPDX-License-Identifier: Apache-2.0
"""Shared by the reliability benchmarks (issue 14): build the release binaries,
start gpuaasd on 127.0.0.1 with a free port in a temporary folder, talk to its
API, and always clean up (daemon killed, folder removed) however the script
ends. Python standard library only."""

import http.client
import json
import math
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HOST = "127.0.0.1"


def log(msg):
    print(msg, flush=True)


def build(build_dir):
    """Builds gpuaasd and gpuaas (RelWithDebInfo, as the other benchmarks do)."""
    subprocess.run(["bash", os.path.join(ROOT, "scripts/deps.sh")], check=True)
    subprocess.run(["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=RelWithDebInfo"],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", build_dir, "-j", str(os.cpu_count() or 2),
                    "--target", "gpuaasd", "gpuaas"], check=True, stdout=subprocess.DEVNULL)


def commit():
    """The commit benchmarked, with '+dirty' when the work tree has changes."""
    try:
        rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return rev + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def raise_fd_limit(need):
    """Raises this process's open-file limit (the daemon inherits it) to at least need."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= need:
        return soft
    if hard != resource.RLIM_INFINITY and hard < need:
        sys.exit(f"open-file limit: hard limit {hard} < {need} needed; raise it (ulimit -Hn)")
    resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    return need


class Workdir:
    """A temporary folder that goes, with every daemon started in it, on exit
    (normal end, exception, SIGINT or SIGTERM)."""

    def __init__(self, prefix):
        self.path = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
        self.daemons = []
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum, _frame):
        raise SystemExit(128 + signum)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for d in self.daemons:
            d.kill()
        shutil.rmtree(self.path, ignore_errors=True)
        return False


class Daemon:
    """One gpuaasd process. start() waits for its ready line and reads the port."""

    def __init__(self, wd, binary, db, args=(), prefix=()):
        self.wd, self.binary, self.db = wd, binary, db
        self.args, self.prefix = list(args), list(prefix)
        self.proc = None
        self.port = None
        self.n_starts = 0
        self.log_path = None
        wd.daemons.append(self)

    def start(self, prefix=None, timeout_s=60.0):
        """Starts it (prefix: a command to run it under, e.g. faketime); returns
        the seconds until ready."""
        self.log_path = os.path.join(self.wd.path, f"daemon{self.n_starts}.log")
        self.n_starts += 1
        token_file = os.path.join(self.wd.path, "token")
        cmd = list(self.prefix if prefix is None else prefix) + [
            self.binary, "--listen", f"{HOST}:0", "--db", self.db,
            "--bootstrap-token-file", token_file] + self.args
        t0 = time.monotonic()
        with open(self.log_path, "wb") as errf:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errf)
        while time.monotonic() - t0 < timeout_s:
            with open(self.log_path, "r", errors="replace") as f:
                m = re.search(r"msg=ready .*port=(\d+)", f.read())
            if m:
                self.port = int(m.group(1))
                return time.monotonic() - t0
            if self.proc.poll() is not None:
                raise RuntimeError(f"gpuaasd exited with {self.proc.returncode} during start:\n"
                                   + self.log_tail())
            time.sleep(0.02)
        raise RuntimeError(f"gpuaasd not ready after {timeout_s} s:\n" + self.log_tail())

    def token(self):
        with open(os.path.join(self.wd.path, "token")) as f:
            return f.read().strip()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def sigkill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc = None

    def stop(self, timeout_s=30.0):
        """SIGTERM and wait; returns the exit status."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.proc = None
        return rc

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def peak_rss_kib(self):
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                m = re.search(r"VmHWM:\s+(\d+) kB", f.read())
            return int(m.group(1)) if m else None
        except OSError:
            return None

    def log_tail(self, n=20):
        try:
            with open(self.log_path, "r", errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""


class Api:
    """A keep-alive client of one daemon with a bearer token."""

    def __init__(self, port, token, timeout_s=30.0):
        self.port, self.token, self.timeout_s = port, token, timeout_s
        self.conn = None

    def raw(self, method, path, body=None):
        """Returns (status, body bytes); reconnects once if the kept connection was closed."""
        headers = {"Authorization": "Bearer " + self.token}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(HOST, self.port, timeout=self.timeout_s)
            try:
                self.conn.request(method, path, body=data, headers=headers)
                resp = self.conn.getresponse()
                return resp.status, resp.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.close()
                if attempt == 1:
                    raise
        raise AssertionError("unreachable")

    def call(self, method, path, body=None, expect=(200, 201)):
        status, data = self.raw(method, path, body)
        if status not in expect:
            raise RuntimeError(f"{method} {path}: {status} {data[:300]!r}")
        return json.loads(data) if data else None

    def list_all(self, path, after=0):
        """Every item of a list route with an id above after, following next_after
        (pages of 1000)."""
        sep = "&" if "?" in path else "?"
        items = []
        while True:
            page = self.call("GET", f"{path}{sep}limit=1000&after={after}")
            items += page["items"]
            if page.get("next_after") is None:
                return items
            after = page["next_after"]

    def close(self):
        if self.conn is not None:
            self.conn.close()
        self.conn = None


def percentile(sorted_values, p):
    """The p-th percentile (nearest rank) of an ascending list."""
    if not sorted_values:
        return float("nan")
    k = math.ceil(p / 100.0 * len(sorted_values)) - 1
    return sorted_values[max(0, min(len(sorted_values) - 1, k))]


def machine():
    with open("/proc/meminfo") as f:
        mem = int(re.search(r"MemTotal:\s+(\d+)", f.read()).group(1))
    return f"{os.cpu_count()} cores, {mem / 1048576:.0f} GiB"
