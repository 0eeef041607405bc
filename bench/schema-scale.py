#!/usr/bin/env python3
"""Engine at schema scale: what N tracked tables cost `basalt serve`. Each table has a foreign
key to the previous one, an object relationship along it, an array relationship back, and select
permissions for two roles. Measures, per size: the engine's RSS once the schema is built, the
time of `replace_metadata` (every table at once), `reload_metadata`, a full introspection query
per role (first answer, cached with and without gzip), and one metadata operation on top of the N tables
(`track_table`, `create_select_permission`, `untrack_table`), and the median of repeated
permission operations with the engine's CPU per operation. Runs release `basalt` on a
throwaway Postgres cluster. Standard library only; see bench/README.md ("Schema scale").

    python3 bench/schema-scale.py                  # sizes 100 and 1000
    python3 bench/schema-scale.py --large          # and 5000
    python3 bench/schema-scale.py --sizes 2000     # any list
"""

import argparse
import gzip as gzip_module
import json
import os
import pathlib
import subprocess
import sys
import time
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.dont_write_bytecode = True  # no __pycache__ in bench/ from importing bench.py
import bench as common  # noqa: E402  (the cluster, ports and /proc helpers of bench.py)

SECRET = "schema-scale-secret"
ROLES = ("user", "editor")

# The introspection query graphql-js's getIntrospectionQuery() sends (descriptions on), as the
# console and client code generators send it.
INTROSPECTION = """
query IntrospectionQuery {
  __schema {
    queryType { name } mutationType { name } subscriptionType { name }
    types { ...FullType }
    directives { name description locations args { ...InputValue } }
  }
}
fragment FullType on __Type {
  kind name description
  fields(includeDeprecated: true) {
    name description args { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason
  }
  inputFields { ...InputValue }
  interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason }
  possibleTypes { ...TypeRef }
}
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue }
fragment TypeRef on __Type {
  kind name ofType { kind name ofType { kind name ofType { kind name ofType {
    kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } }
}
"""


def log(message):
    print(f"[schema-scale {time.strftime('%H:%M:%S')}] {message}", flush=True)


def table_name(i):
    return f"t{i:05d}"


def schema_sql(n):
    """N tables plus one spare (tracked by the single-operation step); table i references
    table i-1, table 0 references itself."""
    lines = []
    for i in range(n + 1):
        parent = table_name(max(i - 1, 0))
        lines.append(f"CREATE TABLE {table_name(i)} (id int PRIMARY KEY, name text, owner text, "
                     f"parent_id int REFERENCES {parent} (id));")
    return "\n".join(lines)


def table_metadata(i):
    name = table_name(i)
    entry = {"table": {"schema": "public", "name": name},
             "object_relationships": [{"name": "parent", "using": {"foreign_key_constraint_on": "parent_id"}}],
             "select_permissions": [
                 {"role": "user", "permission": {"columns": ["id", "name"],
                                                 "filter": {"owner": {"_eq": "X-Svc-User-Id"}}}},
                 {"role": "editor", "permission": {"columns": "*", "filter": {}, "allow_aggregations": True}},
             ]}
    child = table_name(i + 1)
    entry["array_relationships"] = [{"name": "children", "using": {"foreign_key_constraint_on": {
        "table": {"schema": "public", "name": child}, "column": "parent_id"}}}]
    return entry


def metadata(n):
    tables = [table_metadata(i) for i in range(n)]
    tables[-1].pop("array_relationships")  # its child is the spare table, not tracked yet
    return {"version": 2, "tables": tables}


class Engine:
    def __init__(self, base):
        self.base = base

    def query(self, body):
        """POST /v1/query; answers (seconds, answer)."""
        started = time.perf_counter()
        answer = common.post(f"{self.base}/v1/query", body, {"X-Svc-Admin-Secret": SECRET}, timeout=600)
        return time.perf_counter() - started, answer

    def ok(self, body):
        seconds, answer = self.query(body)
        if isinstance(answer, dict) and "error" in answer:
            sys.exit(f"schema-scale: {body['type']} failed: {answer}")
        return seconds

    def introspect(self, role, gzip=True):
        """One schema fetch; answers (seconds, types, answer bytes, bytes on the wire). Sent
        with `Accept-Encoding: gzip` as browsers, Apollo and code generators send it unless
        `gzip` is false."""
        headers = {"X-Svc-Admin-Secret": SECRET}
        if gzip:
            headers["Accept-Encoding"] = "gzip"
        if role != "admin":
            headers["X-Svc-Role"] = role
            headers["X-Svc-User-Id"] = "u1"
        request = urllib.request.Request(
            f"{self.base}/v1/graphql", data=json.dumps({"query": INTROSPECTION}).encode(), method="POST",
            headers={"Content-Type": "application/json", **headers})
        # Timed until the last byte of the answer: the client's JSON parsing is not the engine's.
        started = time.perf_counter()
        with urllib.request.urlopen(request, timeout=600) as response:
            wire = response.read()
            encoding = response.headers.get("Content-Encoding")
        seconds = time.perf_counter() - started
        body = gzip_module.decompress(wire) if encoding == "gzip" else wire
        answer = json.loads(body)
        if "errors" in answer:
            sys.exit(f"schema-scale: introspection as {role} failed: {answer['errors']}")
        return seconds, len(answer["data"]["__schema"]["types"]), len(body), len(wire)


def rss_mb(pid):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def repeated(engine, pid, spare, pairs):
    """`pairs` drop/create pairs of the spare table's permission, back to back (as a GitOps
    sync or the controller's group commits send them): the median wall time of one operation
    and the engine's CPU per operation. Steadier than the single operations above, which one
    scheduling hiccup on a small machine can double."""
    permission = {"table": spare, "role": "user", "permission": {"columns": ["id"], "filter": {}}}
    times = []
    cpu = common.proc_cpu_seconds(pid)
    for _ in range(pairs):
        times.append(engine.ok({"type": "drop_select_permission", "args": {"table": spare, "role": "user"}}))
        times.append(engine.ok({"type": "create_select_permission", "args": permission}))
    cpu = common.proc_cpu_seconds(pid) - cpu
    times.sort()
    return {"operations": len(times), "median_s": round(times[len(times) // 2], 4),
            "engine_cpu_s": round(cpu / max(len(times), 1), 4)}


def measure(n, args, cluster, binary, work):
    log(f"size {n}: {n} tables, {2 * n - 1} relationships, {2 * n} permissions")
    database = f"schema_{n}"
    common.run([common.pg_bin("createdb"), "-h", "127.0.0.1", "-p", str(cluster.port), "-U", "postgres",
                database])
    url = f"postgres://postgres@127.0.0.1:{cluster.port}/{database}"
    schema = pathlib.Path(work) / f"schema-{n}.sql"
    schema.write_text(schema_sql(n))
    common.run([common.pg_bin("psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(schema), url],
               stdout=subprocess.DEVNULL)
    port = common.free_port()
    engine_log = open(pathlib.Path(work) / f"basalt-{n}.log", "w")
    wrapper = args.wrap.split() if args.wrap else []
    process = subprocess.Popen(
        wrapper + [str(binary), "serve", "--database-url", url, "--port", str(port), "--host", "127.0.0.1",
         "--admin-secret", SECRET, "--log-format", "json"],
        stdout=engine_log, stderr=subprocess.STDOUT, env=dict(os.environ, RUST_LOG=args.rust_log))
    try:
        common.wait_http(f"http://127.0.0.1:{port}/healthz", "basalt")
        engine = Engine(f"http://127.0.0.1:{port}")
        rss_empty = rss_mb(process.pid)
        result = {"size": n, "rss_empty_mb": round(rss_empty, 1)}
        result["replace_metadata_s"] = round(engine.ok({"type": "replace_metadata", "args": metadata(n)}), 3)
        result["reload_metadata_s"] = round(engine.ok({"type": "reload_metadata", "args": {}}), 3)
        time.sleep(1)  # let the allocator settle after the builds
        result["rss_built_mb"] = round(rss_mb(process.pid), 1)
        intro = {}
        for role in ("admin",) + ROLES:
            first, types, size, wire = engine.introspect(role)
            again, _, _, _ = engine.introspect(role)
            plain, _, _, _ = engine.introspect(role, gzip=False)
            intro[role] = {"first_s": round(first, 3), "cached_s": round(again, 3),
                           "cached_plain_s": round(plain, 3), "types": types,
                           "answer_mb": round(size / 1e6, 1), "wire_mb": round(wire / 1e6, 2)}
        result["introspection"] = intro
        result["rss_introspected_mb"] = round(rss_mb(process.pid), 1)
        spare = {"schema": "public", "name": table_name(n)}
        ops = {}
        ops["track_table"] = engine.ok({"type": "track_table", "args": {"table": spare}})
        ops["create_select_permission"] = engine.ok({"type": "create_select_permission", "args": {
            "table": spare, "role": "user", "permission": {"columns": ["id"], "filter": {}}}})
        result["repeated"] = repeated(engine, process.pid, spare, args.repeat)
        ops["untrack_table"] = engine.ok({"type": "untrack_table", "args": {"table": spare, "cascade": True}})
        result["operation_s"] = {k: round(v, 3) for k, v in ops.items()}
        result["rss_peak_mb"] = round(common.proc_peak_rss_mb(process.pid), 1)
        result["rss_final_mb"] = round(rss_mb(process.pid), 1)
        return result
    finally:
        common.stop_all([process], 10)


def fmt(r):
    intro = r["introspection"]
    ops = r["operation_s"]
    return "\n".join([
        f"size {r['size']}:",
        f"  RSS:              {r['rss_empty_mb']} MB empty, {r['rss_built_mb']} MB built, "
        f"{r['rss_introspected_mb']} MB after introspection, {r['rss_final_mb']} MB at the end "
        f"(peak {r['rss_peak_mb']} MB)",
        f"  replace_metadata: {r['replace_metadata_s']} s; reload_metadata: {r['reload_metadata_s']} s",
        "  introspection:    " + "; ".join(
            f"{role} {v['first_s']} s first, {v['cached_s']} s again, {v['cached_plain_s']} s without gzip "
            f"({v['types']} types, {v['answer_mb']} MB, {v['wire_mb']} MB sent)"
            for role, v in intro.items()),
        "  one operation:    " + "; ".join(f"{k} {v} s" for k, v in ops.items()),
        f"  repeated:         {r['repeated']['operations']} permission operations back to back, "
        f"median {r['repeated']['median_s']} s, engine CPU {r['repeated']['engine_cpu_s']} s each",
    ])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100,1000", help="comma-separated N (default 100,1000)")
    parser.add_argument("--large", action="store_true", help="add N = 5000")
    parser.add_argument("--rust-log", default="warn", help="the engine's RUST_LOG (default warn)")
    parser.add_argument("--no-build", action="store_true", help="use the existing release binary")
    parser.add_argument("--binary", help="measure this basalt binary instead (implies --no-build), "
                        "e.g. a build of another commit to compare with")
    parser.add_argument("--repeat", type=int, default=10,
                        help="drop/create permission pairs timed back to back (default 10)")
    parser.add_argument("--wrap", help="a profiler command to run the engine under, for example "
                        "'heaptrack -o /tmp/basalt' (RSS figures are then the profiler's)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.large and 5000 not in sizes:
        sizes.append(5000)
    if not args.no_build and not args.binary:
        log("building release basalt (not measured)")
        common.run(["cargo", "build", "--release", "--locked", "--bin", "basalt"], cwd=ROOT)
    binary = pathlib.Path(args.binary).resolve() if args.binary else common.release_dir() / "basalt"
    common.run_sizes("schema-scale", sizes, lambda n, cluster, work: measure(n, args, cluster, binary, work),
                     fmt, log)


if __name__ == "__main__":
    main()
