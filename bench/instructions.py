#!/usr/bin/env python3
"""Instructions per request: Basalt's own work counted, not timed. Runs release `basalt serve`
(and with --compare-binary a second build on the same catalog) under valgrind's callgrind,
sends each query of bench/queries.json one request at a time (or --concurrency at once), and reports the instructions
the server executed per request, as counted by callgrind between two marks. A count does not
move with the load of a shared machine, so a few per cent between two builds show on any
hardware. One request at a time never shares a statement; with --concurrency the requests
share as under load, and the count also depends on how they happened to group (the share of
requests answered by a shared statement is printed). Standard library only; see bench/README.md ("Instructions per
request").

    python3 bench/instructions.py                                   # this tree's release build
    python3 bench/instructions.py --binary A --compare-binary B     # two builds
    python3 bench/instructions.py --api-limits '{"depth_limit": {"global": 10}}'  # limits' cost
"""

import argparse
import concurrent.futures
import json
import os
import pathlib
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.dont_write_bytecode = True  # no __pycache__ in bench/ from importing bench.py
import bench as common  # noqa: E402  (the cluster, ports and helpers of bench.py)

VALGRIND_DEBIAN = "valgrind"  # Debian bookworm: 1:3.19.0-1


def ensure_valgrind():
    if shutil.which("callgrind_control"):
        return
    common.log("installing valgrind from the Debian archive (apt-get install valgrind)")
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    common.run(sudo + ["apt-get", "install", "-y", "-q", "--no-install-recommends", VALGRIND_DEBIAN],
               env=env, stdout=subprocess.DEVNULL)


class Server:
    """One Basalt build under callgrind, counting from the last `zero()`."""

    def __init__(self, name, binary, url, work, processes):
        self.name = name
        self.out = pathlib.Path(work) / f"callgrind-{name}"
        self.out.mkdir()
        self.port = common.free_port()
        self.process = subprocess.Popen(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={self.out}/out.%p",
             str(binary), "serve", "--database-url", url, "--port", str(self.port), "--host", "127.0.0.1",
             "--admin-secret", common.ADMIN_SECRET, "--pool-size", "4", "--log-format", "json"],
            stdout=open(pathlib.Path(work) / f"{name}.log", "w"), stderr=subprocess.STDOUT,
            env=dict(os.environ, RUST_LOG="info"))
        processes.append(self.process)  # stopped by the caller's clean-up even if it never comes up
        # Under callgrind the start is slow.
        common.wait_http(f"{self.base()}/healthz", name, seconds=300)

    def base(self):
        return f"http://127.0.0.1:{self.port}"

    def zero(self):
        common.run(["callgrind_control", "--zero", str(self.process.pid)], capture_output=True)

    def count(self):
        """Instructions since the last `zero()`: callgrind dumps them to a new file."""
        before = set(self.out.iterdir())
        common.run(["callgrind_control", "--dump", str(self.process.pid)], capture_output=True)
        deadline = time.time() + 60
        while time.time() < deadline:
            for path in set(self.out.iterdir()) - before:
                for line in path.read_text().splitlines():
                    if line.startswith("summary:") or line.startswith("totals:"):
                        return int(line.split()[1])
            time.sleep(0.2)
        sys.exit(f"instructions: callgrind wrote no dump for {self.name}")


def send(server, query, value):
    headers = {"X-Svc-Admin-Secret": common.ADMIN_SECRET}
    if query.get("role"):
        headers["X-Svc-Role"] = query["role"]
    var = query["var"]
    variables = {}
    if var.get("session"):
        headers[var["session"]] = str(value)
    else:
        variables[var["name"]] = value
    answer = common.post(f"{server.base()}/v1/graphql", {"query": query["basalt"], "variables": variables},
                         headers)
    if "data" not in answer:
        sys.exit(f"instructions: {query['name']} failed on {server.name}: {answer}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", help="count this basalt binary (default: build this tree's release)")
    parser.add_argument("--compare-binary", help="also count this basalt binary, on the same catalog")
    parser.add_argument("--requests", type=int, default=300, help="requests counted per query (default 300)")
    parser.add_argument("--warmup", type=int, default=100, help="requests sent first, not counted (default 100)")
    parser.add_argument("--only", help="comma-separated query names")
    parser.add_argument("--concurrency", type=int, default=1,
                        help="requests in flight (default 1); above 1 they share statements as under "
                             "load, and the count depends on how they group")
    parser.add_argument("--api-limits",
                        help="count each query twice, without and then with these API limits set "
                             "(the set_api_limits arguments, as JSON), and print the ratio; limits "
                             "apply to every role but admin, so only queries run as a role show them")
    args = parser.parse_args()
    if args.compare_binary and args.api_limits:
        parser.error("--api-limits compares one build with itself; leave out --compare-binary")
    limits = json.loads(args.api_limits) if args.api_limits else None
    if args.requests < 1 or args.concurrency < 1 or args.warmup < 0:
        parser.error("--requests and --concurrency take a positive number, --warmup zero or more")
    # A terminated run still stops its servers and removes its cluster (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("instructions: terminated"))

    ensure_valgrind()
    if not args.binary:
        common.log("building release basalt (not measured)")
        common.run(["cargo", "build", "--release", "--locked", "--bin", "basalt"], cwd=ROOT)
    binary = pathlib.Path(args.binary).resolve() if args.binary else common.release_dir() / "basalt"
    queries = json.loads((HERE / "queries.json").read_text())
    if args.only:
        wanted = set(args.only.split(","))
        queries = [q for q in queries if q["name"] in wanted]

    work = tempfile.mkdtemp(prefix="basalt-instructions-")
    os.chmod(work, 0o755)
    cluster = common.Cluster(work)
    servers, processes = [], []
    try:
        common.log("starting a throwaway Postgres cluster")
        cluster.start()
        url = cluster.url()
        common.log("loading the dataset: 10k authors, 100k articles, 500k comments")
        common.run([common.pg_bin("psql"), "-q", "-v", "ON_ERROR_STOP=1", "-f", str(HERE / "dataset.sql"), url],
                   stdout=subprocess.DEVNULL)
        servers.append(Server("basalt", binary, url, work, processes))
        metadata = json.loads((HERE / "metadata.json").read_text())
        answer = common.post(f"{servers[0].base()}/v1/query", {"type": "replace_metadata", "args": metadata},
                             {"X-Svc-Admin-Secret": common.ADMIN_SECRET}, timeout=300)
        if answer.get("message") != "success":
            sys.exit(f"instructions: tracking failed: {answer}")
        if args.compare_binary:
            # Reads the metadata the first one stored in the catalog.
            servers.append(Server("compared", pathlib.Path(args.compare_binary).resolve(), url, work, processes))
        common.log("servers running under callgrind")

        def count(server, query, row, name):
            # The same values for every server: counted work must not depend on the draw.
            draw = random.Random(query["name"])
            low, high = query["var"]["min"], query["var"]["max"]
            values = [draw.randint(low, high) for _ in range(args.warmup + args.requests)]
            with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
                list(pool.map(lambda v: send(server, query, v), values[:args.warmup]))
                shared = common.shared_counters(server.base())[0]
                server.zero()
                list(pool.map(lambda v: send(server, query, v), values[args.warmup:]))
                row[name] = server.count() / args.requests
                row[f"{name}_shared"] = (common.shared_counters(server.base())[0] - shared) / args.requests

        rows = []
        for query in queries:
            row = {"query": query["name"]}
            for server in servers:
                count(server, query, row, server.name)
            rows.append(row)
            common.log(f"{query['name']:<15} " + "  ".join(
                f"{s.name} {row[s.name]:>9,.0f} (shared {100 * row[s.name + '_shared']:.0f}%)" for s in servers)
                + " instructions/request")
        if limits is not None:
            admin = {"X-Svc-Admin-Secret": common.ADMIN_SECRET}
            answer = common.post(f"{servers[0].base()}/v1/query",
                                 {"type": "set_api_limits", "args": limits}, admin, timeout=60)
            if answer.get("message") != "success":
                sys.exit(f"instructions: set_api_limits failed: {answer}")
            # The new limits are served once the server has rebuilt its schema.
            time.sleep(2)
            for query, row in zip(queries, rows):
                count(servers[0], query, row, "limited")
                common.log(f"{query['name']:<15} limited {row['limited']:>9,.0f} instructions/request "
                           f"({row['limited'] / row['basalt']:.3f}x without)")
            print()
            print("| query | role | instructions/request, no limits | with limits | ratio |")
            print("|---|---|---:|---:|---:|")
            for query, row in zip(queries, rows):
                print(f"| {row['query']} | {query.get('role', 'admin')} | {row['basalt']:,.0f} | "
                      f"{row['limited']:,.0f} | {row['limited'] / row['basalt']:.3f}× |")

        print()
        compared = len(servers) > 1
        print("| query | Basalt instructions/request |" + (" compared | Basalt/compared |" if compared else ""))
        print("|---|---:|" + ("---:|---:|" if compared else ""))
        for row in rows:
            line = f"| {row['query']} | {row['basalt']:,.0f} |"
            if compared:
                line += f" {row['compared']:,.0f} | {row['basalt'] / row['compared']:.3f}× |"
            print(line)
        if compared:
            mean = common.geomean([row["basalt"] / row["compared"] for row in rows])
            print(f"Geometric mean Basalt/compared {mean:.3f}×.")
    finally:
        common.stop_all(processes, timeout=30)
        cluster.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
