#!/usr/bin/env python3
"""Controller at scale: how long `basalt controller` takes to bring N TrackedTables and N
Permissions to Ready from an empty catalog, what that costs (catalog transactions, database
introspections, Kubernetes API requests, peak memory), and what a no-op resync of all 2N
resources costs. Runs release `basalt` and `fake-kube` (crates/fake-kube, the HTTP fake API
server) on a throwaway Postgres cluster. Standard library only; see bench/README.md
("Controller at scale").

    python3 bench/controller-scale.py                 # sizes 100 and 1000
    python3 bench/controller-scale.py --large         # and 3000
    python3 bench/controller-scale.py --sizes 100     # any list
"""

import argparse
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.dont_write_bytecode = True  # no __pycache__ in bench/ from importing bench.py
import bench as common  # noqa: E402  (the cluster, ports and /proc helpers of bench.py)

TOKEN = "basalt-controller"  # the controller's bearer token: its calls are told apart by it
NAMESPACE = "default"


def log(message):
    print(f"[controller-scale {time.strftime('%H:%M:%S')}] {message}", flush=True)


def http_json(url, body=None, timeout=120):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="GET" if body is None else "POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def http_text(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read().decode()


def psql_value(url, sql):
    out = common.run([common.pg_bin("psql"), "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1",
                      "-c", sql, url], capture_output=True).stdout
    return out.strip()


def table_name(i):
    return f"t{i:05d}"


def schema_sql(n):
    """N tables, each with a foreign key: table i references table i-1; table 0 is the root,
    its key pointing at itself (a tree's root row)."""
    lines = []
    for i in range(n):
        parent = table_name(max(i - 1, 0))
        lines.append(f"CREATE TABLE {table_name(i)} (id int PRIMARY KEY, name text, "
                     f"parent_id int REFERENCES {parent} (id));")
    return "\n".join(lines)


def manifests(n):
    """N TrackedTables (each with an object relationship `parent` along its foreign key) and
    N Permissions (select for role `user`)."""
    out = []
    for i in range(n):
        name = table_name(i)
        out.append({"apiVersion": "basalt.dev/v1alpha1", "kind": "TrackedTable",
                    "metadata": {"name": name, "namespace": NAMESPACE},
                    "spec": {"table": {"name": name}, "objectRelationships": [
                        {"name": "parent", "using": {"foreignKeyConstraintOn": "parent_id"}}]}})
        out.append({"apiVersion": "basalt.dev/v1alpha1", "kind": "Permission",
                    "metadata": {"name": f"{name}-user-select", "namespace": NAMESPACE},
                    "spec": {"table": {"name": name}, "role": "user", "operation": "select",
                             "permission": {"columns": "*", "filter": {}}}})
    return out


def is_ready(obj):
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or [])


def scrape(probe):
    """Sum of every sample of each metric family on the controller's /metrics."""
    sums = {}
    for line in http_text(f"{probe}/metrics").splitlines():
        if not line or line.startswith("#"):
            continue
        match = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)", line)
        if match:
            sums[match.group(1)] = sums.get(match.group(1), 0.0) + float(match.group(3))
    return sums


class Catalog:
    """The catalog's version and the database's committed transactions."""

    def __init__(self, url):
        self.url = url

    def version(self):
        value = psql_value(self.url, "SELECT resource_version FROM basalt_catalog.metadata WHERE id = 1")
        return int(value) if value else 0

    def commits(self):
        # A busy backend flushes its statistics at most once a second, an idle one within
        # 10 s: wait them out.
        time.sleep(11)
        return int(psql_value(self.url, "SELECT xact_commit FROM pg_stat_database "
                                        "WHERE datname = current_database()"))


class Calls:
    """The controller's requests to the fake API server, from a starting index on."""

    def __init__(self, fake):
        self.fake = fake

    def total(self):
        return http_json(f"{self.fake}/_fake/calls?since=0&bodies=false")["total"]

    def since(self, index):
        calls = http_json(f"{self.fake}/_fake/calls?since={index}")["calls"]
        return [c for c in calls if c.get("token") == TOKEN]


def summarize(calls):
    def path(c):
        return c["uri"].split("?", 1)[0]
    writes = [c for c in calls if c["method"] in ("POST", "PUT", "PATCH", "DELETE")]
    return {
        "requests": len(calls),
        "watches": sum(1 for c in calls if c["method"] == "GET" and "watch=true" in c["uri"]),
        "reads": sum(1 for c in calls if c["method"] == "GET" and "watch=true" not in c["uri"]),
        "writes": len(writes),
        "status_patches": sum(1 for c in writes if c["method"] == "PATCH" and path(c).endswith("/status")),
        "finalizer_patches": sum(1 for c in writes if c["method"] == "PATCH" and "/events" not in path(c)
                                 and not path(c).endswith("/status")),
        "events": sum(1 for c in writes if "/events" in path(c)),
    }


def wait_until(check, seconds, every=0.5):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if check():
            return True
        time.sleep(every)
    return check()


def measure(n, args, cluster, binaries, work):
    log(f"size {n}: {n} tables + {n} permissions")
    database = f"scale_{n}"
    common.run([common.pg_bin("createdb"), "-h", "127.0.0.1", "-p", str(cluster.port), "-U", "postgres",
                database])
    url = f"postgres://postgres@127.0.0.1:{cluster.port}/{database}"
    schema = pathlib.Path(work) / f"schema-{n}.sql"
    schema.write_text(schema_sql(n))
    common.run([common.pg_bin("psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(schema), url],
               stdout=subprocess.DEVNULL)
    processes = []
    try:
        fake_process = subprocess.Popen([str(binaries["fake-kube"])], stdout=subprocess.PIPE, text=True)
        processes.append(fake_process)
        fake = fake_process.stdout.readline().strip()
        kubeconfig = pathlib.Path(work) / f"kubeconfig-{n}"
        kubeconfig.write_text(http_text(f"{fake}/_fake/kubeconfig?token={TOKEN}"))
        probe_port = common.free_port()
        probe = f"http://127.0.0.1:{probe_port}"
        env = dict(os.environ, KUBECONFIG=str(kubeconfig), BASALT_DATABASE_URL=url,
                   BASALT_CONTROLLER_PROBE_PORT=str(probe_port), BASALT_WATCH_NAMESPACES=NAMESPACE,
                   BASALT_RESYNC_SECONDS=str(args.resync_seconds), BASALT_LEADER_RETRY_MS="200",
                   BASALT_CONTROLLER_CONCURRENCY=str(args.concurrency), RUST_LOG=args.rust_log)
        env.pop("POD_NAMESPACE", None)
        controller_log = open(pathlib.Path(work) / f"controller-{n}.log", "w")
        controller = subprocess.Popen([str(binaries["basalt"]), "controller"], env=env,
                                      stdout=controller_log, stderr=subprocess.STDOUT)
        processes.append(controller)
        common.wait_http(f"{probe}/healthz", "the controller")
        leading = wait_until(lambda: scrape(probe).get("basalt_controller_leader") == 1.0
                             and http_ready(f"{probe}/readyz"), 60)
        if not leading:
            sys.exit(f"controller-scale: the controller did not lead and sync (log: {controller_log.name})")

        catalog, calls = Catalog(url), Calls(fake)
        version0, commits0, calls0 = catalog.version(), catalog.commits(), calls.total()
        metrics0 = scrape(probe)
        objects = manifests(n)
        cpu0 = common.proc_cpu_seconds(controller.pid)
        log(f"applying {len(objects)} resources at once")
        started = time.time()
        http_json(f"{fake}/_fake/apply", objects)
        every = 0.5 if n <= 1000 else 1.0
        last_report = [started]

        def all_ready():
            ready = sum(1 for kind in ("TrackedTable", "Permission")
                        for o in http_json(f"{fake}/_fake/objects?kind={kind}") if is_ready(o))
            if time.time() - last_report[0] >= 30:
                last_report[0] = time.time()
                log(f"  {ready}/{2 * n} Ready after {time.time() - started:.0f} s")
            return ready == 2 * n

        done = wait_until(all_ready, args.timeout, every)
        ready_seconds = time.time() - started
        rss_mb = common.proc_peak_rss_mb(controller.pid)
        cpu = common.proc_cpu_seconds(controller.pid) - cpu0
        result = {"size": n, "resources": 2 * n, "all_ready": done,
                  "ready_seconds": round(ready_seconds, 2), "cpu_seconds": round(cpu, 1),
                  "peak_rss_mb": round(rss_mb, 1)}
        metrics1 = scrape(probe)
        result["catalog_versions"] = catalog.version() - version0
        result["xact_commits"] = catalog.commits() - commits0
        result["introspections"] = introspections(metrics0, metrics1)
        result["reconciles"] = int(metrics1.get("basalt_controller_reconciles_total", 0)
                                   - metrics0.get("basalt_controller_reconciles_total", 0))
        result["api"] = summarize(calls.since(calls0))
        if not done:
            log(f"  not every resource was Ready within {args.timeout} s; no resync measured")
            return result
        result["resync"] = resync(n, args, probe, catalog, calls)
        result["peak_rss_mb"] = round(common.proc_peak_rss_mb(controller.pid), 1)
        return result
    finally:
        common.stop_all(list(reversed(processes)), timeout=30)


def http_ready(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except (urllib.error.HTTPError, OSError):
        return False


def introspections(before, after):
    name = "basalt_controller_introspections_total"
    if name not in after:
        return "n/a"
    return int(after[name] - before.get(name, 0))


def resync(n, args, probe, catalog, calls):
    """Waits for the reconciles to stop (every timer then runs on the resync period from the
    last pass), then times the next pass over all 2N resources: from its first reconcile to its
    2N-th, with the catalog writes and API writes it made."""
    def reconciles():
        return scrape(probe).get("basalt_controller_reconciles_total", 0)

    log(f"  waiting for the no-op resync (--resync-seconds {args.resync_seconds})")
    quiet, last = time.time(), reconciles()
    while time.time() - quiet < 3:
        time.sleep(0.2)
        now = reconciles()
        if now != last:
            quiet, last = time.time(), now
    # The instant figures first: the next pass is a resync period after the last one.
    version0, calls0, base = catalog.version(), calls.total(), reconciles()
    commits0 = catalog.commits()
    if not wait_until(lambda: reconciles() > base, args.resync_seconds + 60, 0.05):
        return {"error": "no resync reconcile within the resync period"}
    first = time.time()
    complete = wait_until(lambda: reconciles() >= base + 2 * n, 600, 0.05)
    seconds = time.time() - first
    api = summarize(calls.since(calls0))
    return {"complete": complete, "seconds": round(seconds, 2),
            "reconciles": int(reconciles() - base),
            "catalog_writes": catalog.version() - version0,
            "xact_commits": catalog.commits() - commits0,
            "status_patches": api["status_patches"], "api_writes": api["writes"],
            "api_requests": api["requests"]}


def fmt(result):
    api = result["api"]
    lines = [
        f"size {result['size']}: {result['resources']} resources",
        f"  Ready:            {'all' if result['all_ready'] else 'NOT all'} in {result['ready_seconds']} s"
        f" ({result['reconciles']} reconciles, controller CPU {result['cpu_seconds']} s)",
        f"  catalog:          {result['catalog_versions']} versions committed, "
        f"{result['xact_commits']} database transactions",
        f"  introspections:   {result['introspections']}",
        f"  API requests:     {api['requests']} ({api['reads']} reads, {api['watches']} watches, "
        f"{api['writes']} writes: {api['status_patches']} status, {api['finalizer_patches']} finalizer, "
        f"{api['events']} events)",
        f"  peak RSS:         {result['peak_rss_mb']} MB",
    ]
    r = result.get("resync")
    if r and "error" not in r:
        lines.append(f"  no-op resync:     {r['reconciles']} reconciles in {r['seconds']} s"
                     f"{'' if r['complete'] else ' (incomplete)'}, {r['catalog_writes']} catalog writes, "
                     f"{r['status_patches']} status patches, {r['api_writes']} API writes, "
                     f"{r['xact_commits']} database transactions")
    elif r:
        lines.append(f"  no-op resync:     {r['error']}")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100,1000", help="comma-separated N (default 100,1000)")
    parser.add_argument("--large", action="store_true", help="add N = 3000")
    parser.add_argument("--resync-seconds", type=int, default=60,
                        help="the controller's --resync-seconds (default 60)")
    parser.add_argument("--concurrency", type=int, default=8,
                        help="the controller's --concurrency (default 8, the chart's)")
    parser.add_argument("--timeout", type=float, default=900,
                        help="seconds to wait for every resource to be Ready (default 900)")
    parser.add_argument("--rust-log", default="info", help="the controller's RUST_LOG (default info)")
    parser.add_argument("--no-build", action="store_true", help="use the existing release binaries")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("controller-scale: terminated"))
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.large and 3000 not in sizes:
        sizes.append(3000)

    if not args.no_build:
        log("building release basalt and fake-kube (not measured)")
        common.run(["cargo", "build", "--release", "--locked", "-p", "basalt", "-p", "fake-kube",
                    "--bin", "basalt", "--bin", "fake-kube"], cwd=ROOT)
    binaries = {name: common.release_dir() / name for name in ("basalt", "fake-kube")}

    common.run_sizes("controller-scale", sizes,
                     lambda n, cluster, work: measure(n, args, cluster, binaries, work), fmt, log)


if __name__ == "__main__":
    main()
