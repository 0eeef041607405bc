"""The remote-join part of the benchmark (bench/run.sh --remote-joins). A local GraphQL service
(bench/remote-join-server.mjs, graphql-js) joined to `article` by a remote relationship
(`badge`: `badge(id: $id)`); one client, one keep-alive connection, requests one after another,
each with its own `$after` (50 rows from a random place). Measures, in one run:
- plain: the 50 rows without the join;
- joined: the same rows with `badge { label }`;
- remote: the request Basalt sends for them (50 aliases), POSTed straight to the service;
and counts the service's requests, which must be exactly one per joined request. The target:
joined - plain is at most one remote round trip (the `remote` figure). Standard library only."""

import http.client
import json
import pathlib
import random
import statistics
import subprocess
import time
import urllib.parse
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
GRAPHQL_PACKAGE = "graphql@16.9.0"
ROWS = 50
PLAIN = ("query ($after: Int!) { article(order_by: {id: asc}, limit: 50, where: {id: {_gt: $after}}) "
         "{ id title } }")
JOINED = ("query ($after: Int!) { article(order_by: {id: asc}, limit: 50, where: {id: {_gt: $after}}) "
          "{ id title badge { label } } }")


def install_server(work, run):
    server = pathlib.Path(work) / "remote-join"
    server.mkdir(exist_ok=True)
    run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(server),
         GRAPHQL_PACKAGE], stdout=subprocess.DEVNULL)
    (server / "server.mjs").write_text((HERE / "remote-join-server.mjs").read_text())
    return server / "server.mjs"


def stats(remote):
    with urllib.request.urlopen(f"{remote}/stats", timeout=10) as response:
        return json.loads(response.read())["requests"]


class Client:
    """One keep-alive connection; `time(path, body, headers)` answers seconds taken."""

    def __init__(self, base):
        parsed = urllib.parse.urlparse(base)
        self.connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)

    def time(self, path, body, headers):
        data = json.dumps(body).encode()
        started = time.perf_counter()
        self.connection.request("POST", path, data, {"Content-Type": "application/json", **headers})
        answer = self.connection.getresponse().read()
        taken = time.perf_counter() - started
        parsed = json.loads(answer)
        if "errors" in parsed:
            raise SystemExit(f"bench: the request failed: {answer[:300]!r}")
        return taken


def setup(base, secret, post, remote, log):
    answer = post(f"{base}/v1/query", {"type": "bulk", "args": [
        {"type": "add_remote_schema", "args": {"name": "badges", "definition": {"url": f"{remote}/graphql"}}},
        {"type": "create_remote_relationship", "args": {"name": "badge", "table": "article", "definition": {
            "to_remote_schema": {"remote_schema": "badges", "lhs_fields": ["id"],
                                 "remote_field": {"badge": {"arguments": {"id": "$id"}}}}}}},
    ]}, {"X-Svc-Admin-Secret": secret})
    if not isinstance(answer, list):
        raise SystemExit(f"bench: remote relationship setup failed: {answer}")
    log("remote schema `badges` added, `article.badge` created")


def measure(*, base, secret, remote, requests, warmup, log):
    headers = {"X-Svc-Admin-Secret": secret}
    client = Client(base)
    direct = Client(remote)
    seeds = random.Random(52)

    def after():
        return seeds.randrange(0, 100_000 - ROWS)

    def document(start):
        aliases = " ".join(f"f{i}: badge(id: {start + 1 + i}) {{ label }}" for i in range(ROWS))
        return {"query": f"query {{ {aliases} }}"}

    kinds = {
        "plain": lambda: client.time("/v1/graphql", {"query": PLAIN, "variables": {"after": after()}}, headers),
        "joined": lambda: client.time("/v1/graphql", {"query": JOINED, "variables": {"after": after()}}, headers),
        "remote": lambda: direct.time("/graphql", document(after()), {}),
    }
    for run in kinds.values():
        for _ in range(warmup):
            run()
    before = stats(remote)
    samples = {kind: [] for kind in kinds}
    # Interleaved, so drift in the machine's speed falls on every kind alike.
    for _ in range(requests):
        for kind, run in kinds.items():
            samples[kind].append(run() * 1000)
    calls = stats(remote) - before - requests  # the direct requests are counted too
    rows = []
    for kind, values in samples.items():
        values.sort()
        rows.append({"kind": kind, "requests": len(values), "mean_ms": statistics.fmean(values),
                     "p50_ms": values[len(values) // 2], "p99_ms": values[int(len(values) * 0.99) - 1]})
    by = {r["kind"]: r for r in rows}
    extra = by["joined"]["p50_ms"] - by["plain"]["p50_ms"]
    rows.append({"kind": "summary", "remote_calls_per_joined_request": calls / requests,
                 "join_cost_p50_ms": extra, "join_cost_in_round_trips": extra / by["remote"]["p50_ms"]})
    log(f"{requests} requests of each kind measured")
    return rows


def table(rows):
    lines = ["| request | mean ms | p50 ms | p99 ms |", "|---|---:|---:|---:|"]
    summary = {}
    for r in rows:
        if r["kind"] == "summary":
            summary = r
            continue
        lines.append(f"| {r['kind']} | {r['mean_ms']:.2f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} |")
    lines.append("")
    lines.append(f"remote calls per joined request: {summary['remote_calls_per_joined_request']:.2f}; "
                 f"join cost at p50: {summary['join_cost_p50_ms']:.2f} ms = "
                 f"{summary['join_cost_in_round_trips']:.2f} remote round trips")
    return "\n".join(lines)
