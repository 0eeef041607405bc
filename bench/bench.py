#!/usr/bin/env python3
"""Basalt benchmark: Basalt against the HTTP floor (bench/http-floor), the raw-SQL floor (pgbench)
and, optionally, PostGraphile, all on one throwaway Postgres cluster in one run. Run it through bench/run.sh; see
bench/README.md for the method and how to read the table. Standard library only."""

import argparse
import glob
import json
import math
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
ADMIN_SECRET = "bench-admin-secret"
MARKER = 424242  # a variable value that cannot occur in the SQL otherwise
POSTGRAPHILE = ["postgraphile@4.14.1", "@graphile/pg-aggregates@0.1.1"]
WRK_DEBIAN = "wrk"  # Debian bookworm: 4.1.0-3


def log(message):
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pg_bin(name):
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]))
    if found:
        return found[-1]
    path = shutil.which(name)
    if not path:
        sys.exit(f"bench: {name} not found (install the PostgreSQL server package)")
    return path


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, **kw)


class Cluster:
    """A throwaway Postgres cluster on a free port (as user postgres when run as root)."""

    def __init__(self, base, preload=None):
        self.dir = pathlib.Path(base) / "pg"
        self.port = free_port()
        self.preload = preload
        self.as_root = os.geteuid() == 0
        self.dir.mkdir(parents=True)
        if self.as_root:
            shutil.chown(base, "postgres")
            shutil.chown(self.dir, "postgres")

    def _cmd(self, cmd):
        return (["runuser", "-u", "postgres", "--"] + cmd) if self.as_root else cmd

    def start(self):
        data = str(self.dir / "data")
        run(self._cmd([pg_bin("initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8"]),
            stdout=subprocess.DEVNULL)
        opts = (f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.dir} "
                "-c shared_buffers=256MB -c max_connections=200 -c fsync=off -c synchronous_commit=off")
        if self.preload:
            opts += f" -c shared_preload_libraries={self.preload}"
        run(self._cmd([pg_bin("pg_ctl"), "-D", data, "-o", opts, "-l", str(self.dir / "log"), "-w", "start"]),
            stdout=subprocess.DEVNULL)
        run([pg_bin("createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "bench"])

    def url(self):
        return f"postgres://postgres@127.0.0.1:{self.port}/bench"

    def stop(self):
        """Stops the server and removes its data directory (hundreds of MB at schema scale);
        the server log stays beside the run's other logs."""
        subprocess.run(self._cmd([pg_bin("pg_ctl"), "-D", str(self.dir / "data"), "-m", "fast", "stop"]),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(self.dir / "data", ignore_errors=True)


def post(url, body, headers=None, timeout=60):
    data = json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="POST",
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as e:
        return json.loads(e.read() or b"null")


def wait_http(url, what, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            time.sleep(0.2)
    sys.exit(f"bench: {what} did not come up at {url}")


def shared_counters(base):
    """Basalt's shared-statement counters (requests answered shared, requests declined)."""
    request = urllib.request.Request(f"{base}/metrics", headers={"X-Svc-Admin-Secret": ADMIN_SECRET})
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read().decode()
    counters = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in ("basalt_shared_requests_total", "basalt_shared_declined_total"):
            counters[name] = float(value)
    return counters.get("basalt_shared_requests_total", 0), counters.get("basalt_shared_declined_total", 0)


def proc_cpu_seconds(pid):
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def postgres_cpu_seconds(cluster):
    """CPU seconds used so far by the cluster: the postmaster, its live backends, and the
    backends that exited (the postmaster reaps them, so their time is in its cutime and
    cstime; without it a pool reconnecting during a window made the figure negative)."""
    postmaster = int((cluster.dir / "data" / "postmaster.pid").read_text().split()[0])
    total = 0.0
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            fields = pathlib.Path(stat).read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        pid = int(stat.split("/")[2])
        if pid == postmaster or int(fields[1]) == postmaster:
            ticks = int(fields[11]) + int(fields[12])
            if pid == postmaster:
                ticks += int(fields[13]) + int(fields[14])
            total += ticks / os.sysconf("SC_CLK_TCK")
    return total


def stop_all(processes, timeout):
    """SIGTERM every process, then wait for each (killing those not gone within `timeout` s)."""
    for process in processes:
        process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()


def release_dir():
    """Where cargo puts release binaries (`CARGO_TARGET_DIR` honoured)."""
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return (target if target.is_absolute() else ROOT / target) / "release"


def run_sizes(name, sizes, measure, fmt, log):
    """Starts a throwaway cluster, then for each size n: `measure(n, cluster, work)`, prints
    `fmt(result)` and appends the result to bench/results/<name>-<time>.jsonl."""
    work = tempfile.mkdtemp(prefix=f"basalt-{name}-")
    os.chmod(work, 0o755)
    cluster = Cluster(work)
    results_dir = HERE / "results"
    results_dir.mkdir(exist_ok=True)
    results_path = results_dir / time.strftime(f"{name}-%Y%m%d-%H%M%S.jsonl")
    try:
        log("starting a throwaway Postgres cluster")
        cluster.start()
        for n in sizes:
            result = measure(n, cluster, work)
            with open(results_path, "a") as out:
                out.write(json.dumps(result) + "\n")
            print(fmt(result), flush=True)
        log(f"raw figures: {results_path}; logs: {work}")
    finally:
        cluster.stop()


def proc_peak_rss_mb(pid):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def ensure_wrk():
    if shutil.which("wrk"):
        return
    log("installing wrk from the Debian archive (apt-get install wrk)")
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    run(sudo + ["apt-get", "install", "-y", "-q", "--no-install-recommends", WRK_DEBIAN], env=env,
        stdout=subprocess.DEVNULL)


def wrk(url, query, conc, seconds, headers):
    """Drives `url` with wrk for `seconds`; returns the figures of bench/wrk.lua. A query with a
    `path` is a GET of that path (its variable's value in place of `__VALUE__`)."""
    var = query["var"]
    session = var.get("session")
    variables = {} if session else {var["name"]: "__VALUE__"}
    body = json.dumps({"query": query["text"], "variables": variables})
    body = body.replace('"__VALUE__"', "__VALUE__")
    env = dict(os.environ, BENCH_BODY=body, BENCH_MIN=str(var["min"]), BENCH_MAX=str(var["max"]),
               BENCH_HEADER=session or "", BENCH_PATH=query.get("path", ""),
               BENCH_HEADERS="\n".join(f"{k}: {v}" for k, v in headers.items()))
    threads = min(conc, 2)
    out = run(["wrk", "-t", str(threads), "-c", str(conc), "-d", f"{max(1, round(seconds))}s", "-s", str(HERE / "wrk.lua"), url],
              env=env, capture_output=True).stdout
    figures = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])
    figures["rps"] = figures["requests"] / (figures["duration_us"] / 1e6)
    return figures


def pgbench(url, script, conc, seconds):
    out = run([pg_bin("pgbench"), "-n", "-M", "prepared", "-c", str(conc), "-j", str(min(conc, 2)),
               "-T", str(seconds), "-f", str(script), url], capture_output=True).stdout
    tps = float(re.search(r"tps = ([\d.]+) \(without initial connection time\)", out).group(1))
    failed = re.search(r"number of failed transactions: (\d+)", out)
    latency = re.search(r"latency average = ([\d.]+) ms", out)
    return {"rps": tps, "errors": int(failed.group(1)) if failed else 0,
            "latency_avg_ms": float(latency.group(1)) if latency else None}


def sql_literal(text):
    return "'" + text.replace("'", "''") + "'"


def floor_script(query, explained):
    """A pgbench script running exactly the SQL `explain` returned, the variable drawn per
    transaction like the HTTP load does; other parameters are inlined as literals."""
    var = query["var"]
    name = var["name"]
    params = explained["params"]
    marker = str(MARKER)

    def replacement(index):
        value = params[index - 1]
        if value is None:
            return "NULL"
        if value == marker:
            return f":{name}"
        if marker in value:  # the session JSON carrying a session variable
            before, after = value.split(marker, 1)
            return f"({sql_literal(before)}::text || :{name}::text || {sql_literal(after)}::text)"
        return sql_literal(value)

    sql = re.sub(r"\$(\d+)\b", lambda m: replacement(int(m.group(1))), explained["sql"])
    return (f"-- {query['name']}: {query['about']}. Generated by bench/bench.py --write-floor from\n"
            f"-- POST /v1/graphql/explain; the run fails when it no longer matches.\n"
            f"\\set {name} random({var['min']}, {var['max']})\n{sql};\n")


def explain(base, query):
    var = query["var"]
    user = {"x-svc-role": query.get("role", "admin")}
    variables = {}
    if var.get("session"):
        user[var["session"]] = str(MARKER)
    else:
        variables[var["name"]] = MARKER
    answer = post(f"{base}/v1/graphql/explain",
                  {"query": {"query": query["text"], "variables": variables}, "user": user},
                  {"X-Svc-Admin-Secret": ADMIN_SECRET})
    if not isinstance(answer, list) or len(answer) != 1:
        sys.exit(f"bench: explain of {query['name']} failed: {answer}")
    return answer[0]


# ---- correctness -----------------------------------------------------------------------------

# PostGraphile's names for the same things (its inflection of the same tables and foreign keys).
RENAMES = {
    "articleById": "article_by_pk", "allArticles": "article", "allAuthors": "author",
    "articlesByAuthorId": "articles", "authorByAuthorId": "author", "commentsByArticleId": "comments",
    "createComment": "insert_comment_one",
}


def normalize_postgraphile(value):
    """PostGraphile's answer in Basalt's shape: connections unwrapped (`nodes`), names mapped
    back (RENAMES; a connection asked only for aggregates is `<table>_aggregate`), `totalCount` + `aggregates.average` as `aggregate.count` + `avg`, the
    mutation payload unwrapped, BigFloat strings as numbers."""
    if isinstance(value, list):
        return [normalize_postgraphile(v) for v in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {"nodes"}:
        return normalize_postgraphile(value["nodes"])
    if "totalCount" in value and "aggregates" in value:
        avg = value["aggregates"]["average"]["views"]
        return {"aggregate": {"count": value["totalCount"], "avg": {"views": float(avg)}}}
    if set(value) == {"comment"}:
        return normalize_postgraphile(value["comment"])
    def name(key, inner):
        # A connection asked only for its aggregates is Basalt's `<table>_aggregate` field.
        if isinstance(inner, dict) and "totalCount" in inner and "nodes" not in inner:
            return RENAMES.get(key, key) + "_aggregate"
        return RENAMES.get(key, key)

    return {name(k, v): normalize_postgraphile(v) for k, v in value.items()}


def normalize_basalt(value):
    if isinstance(value, list):
        return [normalize_basalt(v) for v in value]
    if isinstance(value, dict):
        out = {k: normalize_basalt(v) for k, v in value.items()}
        if "avg" in out and isinstance(out["avg"], dict):
            out["avg"] = {k: float(v) for k, v in out["avg"].items()}
        return out
    return value


def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(float(a), float(b), rel_tol=1e-9)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def check_answers(query, basalt, floor, postgraphile):
    b = normalize_basalt(basalt.get("data"))
    if "errors" in basalt:
        return f"Basalt answered errors: {basalt['errors']}"
    if not isinstance(floor, dict) or "errors" in floor:
        return f"the HTTP floor answered {floor}"
    f = normalize_basalt(floor.get("data"))
    if query["name"] == "insert_one":
        if not isinstance(f["insert_comment_one"]["id"], int):
            return f"the HTTP floor returned no id: {f}"
    elif not same(b, f):
        return f"different data:\n  basalt:     {json.dumps(b)[:400]}\n  HTTP floor: {json.dumps(f)[:400]}"
    if postgraphile is None:
        return None
    if "errors" in postgraphile:
        return f"PostGraphile answered errors: {postgraphile['errors']}"
    p = normalize_postgraphile(postgraphile.get("data"))
    if query["name"] == "insert_one":
        ok = isinstance(b["insert_comment_one"]["id"], int) and isinstance(p["insert_comment_one"]["id"], int)
        return None if ok else f"ids expected, got {b} and {p}"
    return None if same(b, p) else f"different data:\n  basalt:       {json.dumps(b)[:400]}\n  postgraphile: {json.dumps(p)[:400]}"


# ---- the run ---------------------------------------------------------------------------------

def combine(runs):
    """The wrk figures of measured runs of one target as one: totals, rates over the summed
    time, and the latency percentiles of the (upper) median run by p50."""
    total = {key: sum(r.get(key, 0) for r in runs) for key in
             ("requests", "duration_us", "socket_errors", "status_errors", "cpu_s", "pg_cpu_s", "shared", "declined")}
    middle = sorted(runs, key=lambda r: r["p50_us"])[len(runs) // 2]
    figures = dict(total, p50_us=middle["p50_us"], p99_us=middle["p99_us"], rounds=len(runs))
    requests = max(1, total["requests"])
    figures["rps"] = total["requests"] / (total["duration_us"] / 1e6)
    figures["cpu_us_per_request"] = 1e6 * total["cpu_s"] / requests
    figures["pg_cpu_us_per_request"] = 1e6 * total["pg_cpu_s"] / requests
    if "shared" in runs[0]:
        figures["shared_fraction"] = total["shared"] / requests
        figures["declined_fraction"] = total["declined"] / requests
    return figures


def ratio(a, b):
    return a / b if a and b else None


def geomean(values):
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def fmt(value, digits=0, suffix=""):
    if value is None:
        return "–"
    return f"{value:,.{digits}f}{suffix}"


def report(results_path, kind, rows, table):
    """Writes `rows` as JSON lines under `kind` and prints their `table`."""
    with open(results_path, "w") as jsonl:
        for row in rows:
            jsonl.write(json.dumps({kind: row}) + "\n")
    print()
    print(table)
    print(f"Raw figures: {results_path.relative_to(ROOT)}")


def subscription_load(args, binary, cluster, work, processes, results_path):
    """`--subscription-load`: see bench/subscription_load.py."""
    import subscription_load as load
    url = cluster.url()
    run([pg_bin("psql"), "-q", "-v", "ON_ERROR_STOP=1", "-c", "CREATE EXTENSION pg_stat_statements", url],
        stdout=subprocess.DEVNULL)
    run([pg_bin("psql"), "-q", "-v", "ON_ERROR_STOP=1", "-c", load.tables_sql(), url],
        stdout=subprocess.DEVNULL)

    def start_engine(mode):
        port = free_port()
        engine_log = open(pathlib.Path(work) / f"basalt-{mode}.log", "w")
        # Pinned to one core; the client takes the other.
        process = subprocess.Popen(
            ["taskset", "-c", "0", str(binary), "serve", "--database-url", url, "--port", str(port),
             "--host", "127.0.0.1", "--admin-secret", ADMIN_SECRET, "--pool-size", str(args.pool_size),
             "--log-format", "json", "--websocket-max-connections", "20000"],
            stdout=engine_log, stderr=subprocess.STDOUT,
            env=dict(os.environ, RUST_LOG="warn", BASALT_LIVE_QUERIES_CHANGE_DETECTION=mode,
                     BASALT_LIVE_QUERIES_MULTIPLEXED_REFETCH_INTERVAL="1000",
                     BASALT_LIVE_QUERIES_MULTIPLEXED_BATCH_SIZE="100",
                     BASALT_LIVE_QUERIES_FALLBACK_REFETCH_INTERVAL="30000"))
        processes.append(process)
        wait_http(f"http://127.0.0.1:{port}/healthz", f"basalt ({mode})")
        return process, port

    def stop_engine(process):
        process.terminate()
        process.wait(timeout=60)

    first, port = start_engine("on")
    load.track(f"http://127.0.0.1:{port}", ADMIN_SECRET, post)
    stop_engine(first)
    log(f"{load.SHAPES} shape tables of {load.PER_SHAPE} rows tracked")
    client = load.install_client(work, run, HERE)
    rows = []
    for mode in ("on", "off"):
        rows.append(load.measure(
            mode=mode, start_engine=start_engine, stop_engine=stop_engine, secret=ADMIN_SECRET,
            url=url, psql=pg_bin("psql"), cpu_seconds=proc_cpu_seconds, client=client,
            idle_seconds=args.idle_seconds or 40,
            load_seconds=args.load_seconds or (20 if args.quick else 60), log=log))
    report(results_path, "subscription_load", rows, load.table(rows))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="3 s per measurement, 1 s warm-up")
    parser.add_argument("--duration", type=float, help="seconds per measurement (default 10)")
    parser.add_argument("--warmup", type=float, help="warm-up seconds, not measured (default 2)")
    parser.add_argument("--with-postgraphile", action="store_true", help="also measure PostGraphile v4")
    parser.add_argument("--only", help="comma-separated query names")
    parser.add_argument("--concurrency", default="1,16", help="comma-separated (default 1,16)")
    parser.add_argument("--pool-size", type=int, default=16, help="Basalt's BASALT_POOL_SIZE")
    parser.add_argument("--write-floor", action="store_true", help="rewrite bench/floor/*.sql from explain")
    parser.add_argument("--no-build", action="store_true", help="use the existing target/release/basalt")
    parser.add_argument("--binary", help="measure this basalt binary instead (implies --no-build), "
                        "e.g. a build of another commit to compare with")
    parser.add_argument("--compare-binary",
                        help="also measure this basalt binary (e.g. a build of the commit before a change) "
                             "at every point, next to the measured one, and print their ratio")
    parser.add_argument("--rounds", type=int, default=1,
                        help="with --compare-binary: measure the two builds this many times at every point, "
                             "alternating which goes first (default 1)")
    parser.add_argument("--rust-log", default="info",
                        help="RUST_LOG of the Basalt server (default info, as operators run it: one log line per request)")
    parser.add_argument("--subscriptions", action="store_true",
                        help="measure live subscriptions instead of the queries (see bench/README.md)")
    parser.add_argument("--subscribers", default="1000,10000",
                        help="with --subscriptions: comma-separated subscriber counts (default 1000,10000)")
    parser.add_argument("--idle-seconds", type=float,
                        help="with --subscriptions: seconds of idle polling measured (default 20); "
                             "with --subscription-load: seconds without writes measured (default 40, "
                             "past one 30 s fallback tick)")
    parser.add_argument("--subscription-load", action="store_true",
                        help="measure 10,000 subscribers over 100 shapes with change detection on and "
                             "off instead of the queries (see bench/README.md)")
    parser.add_argument("--load-seconds", type=float,
                        help="with --subscription-load: seconds the writer runs (default 60, 20 with --quick)")
    parser.add_argument("--rest", action="store_true",
                        help="measure by_pk as a REST endpoint beside /v1/graphql (bench/rest.py) instead of the queries")
    parser.add_argument("--remote-joins", action="store_true",
                        help="measure a remote relationship (bench/remote_joins.py) instead of the queries")
    parser.add_argument("--events", action="store_true",
                        help="measure event-trigger delivery instead of the queries (see bench/README.md)")
    parser.add_argument("--event-backlog", type=int, default=50000,
                        help="with --events: row changes inserted at once for the throughput (default 50000)")
    args = parser.parse_args()
    if args.rounds < 1 or (args.rounds > 1 and not args.compare_binary):
        parser.error("--rounds takes a positive number, and more than 1 only with --compare-binary")
    if args.compare_binary and (args.events or args.subscriptions or args.subscription_load
                                or args.remote_joins or args.rest):
        parser.error("--compare-binary compares the queries only, not --events or --subscriptions")
    # A terminated run still stops its servers and removes its cluster (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("bench: terminated"))
    duration = args.duration or (3 if args.quick else 10)
    warmup = args.warmup if args.warmup is not None else (1 if args.quick else 2)
    levels = [int(c) for c in args.concurrency.split(",")]
    queries = json.loads((HERE / "queries.json").read_text())
    if args.only:
        wanted = set(args.only.split(","))
        queries = [q for q in queries if q["name"] in wanted]

    ensure_wrk()
    if not args.no_build and not args.binary:
        log("building release basalt (not measured)")
        run(["cargo", "build", "--release", "--locked", "--bin", "basalt"], cwd=ROOT)
    if not args.no_build:
        log("building the HTTP floor server (not measured)")
        run(["cargo", "build", "--release", "--locked", "-p", "http-floor"], cwd=ROOT)
    binary = pathlib.Path(args.binary).resolve() if args.binary else release_dir() / "basalt"

    work = tempfile.mkdtemp(prefix="basalt-bench-")
    os.chmod(work, 0o755)
    cluster = Cluster(work, preload="pg_stat_statements" if args.subscription_load else None)
    processes = []
    results_dir = HERE / "results"
    results_dir.mkdir(exist_ok=True)
    results_path = results_dir / time.strftime("run-%Y%m%d-%H%M%S.jsonl")
    try:
        postgraphile_dir = None
        if args.with_postgraphile:
            postgraphile_dir = pathlib.Path(work) / "postgraphile"
            postgraphile_dir.mkdir()
            log(f"installing {' '.join(POSTGRAPHILE)} from npm (not measured)")
            run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix",
                 str(postgraphile_dir)] + POSTGRAPHILE, stdout=subprocess.DEVNULL)

        log("starting a throwaway Postgres cluster")
        cluster.start()
        url = cluster.url()
        if args.subscription_load:
            subscription_load(args, binary, cluster, work, processes, results_path)
            return
        log("loading the dataset: 10k authors, 100k articles, 500k comments")
        run([pg_bin("psql"), "-q", "-v", "ON_ERROR_STOP=1", "-f", str(HERE / "dataset.sql"), url],
            stdout=subprocess.DEVNULL)

        def start_basalt(name, program=binary):
            port = free_port()
            basalt_log = open(pathlib.Path(work) / f"{name}.log", "w")
            process = subprocess.Popen(
                [str(program), "serve", "--database-url", url, "--port", str(port), "--host", "127.0.0.1",
                 "--admin-secret", ADMIN_SECRET, "--pool-size", str(args.pool_size), "--log-format", "json",
                 "--websocket-max-connections", "20000"],
                stdout=basalt_log, stderr=subprocess.STDOUT, env=dict(os.environ, RUST_LOG=args.rust_log))
            processes.append(process)
            wait_http(f"http://127.0.0.1:{port}/healthz", name)
            return process, port

        basalt, port = start_basalt("basalt")
        base = f"http://127.0.0.1:{port}"
        metadata = json.loads((HERE / "metadata.json").read_text())
        answer = post(f"{base}/v1/query", {"type": "replace_metadata", "args": metadata},
                      {"X-Svc-Admin-Secret": ADMIN_SECRET})
        if answer.get("message") != "success":
            sys.exit(f"bench: tracking failed: {answer}")
        log("tables and relationships tracked through /v1/query")
        compared, compared_base = None, None
        if args.compare_binary:
            # Reads the metadata the first one stored in the catalog.
            compared, compared_port = start_basalt("compared", pathlib.Path(args.compare_binary).resolve())
            compared_base = f"http://127.0.0.1:{compared_port}"
            log(f"compared binary {args.compare_binary} running")

        if args.events:
            import events
            rows = events.measure(base=base, secret=ADMIN_SECRET, post=post, psql=pg_bin("psql"),
                                  pgbench=pg_bin("pgbench"), url=url, run=run, work=work,
                                  start_replica=lambda: start_basalt("basalt-2"), free_port=free_port,
                                  log=log, backlog=args.event_backlog,
                                  latency_seconds=5 if args.quick else 15)
            report(results_path, "events", rows, events.table(rows))
            return

        if args.rest:
            import rest
            rest.setup(base, ADMIN_SECRET, post, log)
            rows = rest.measure(base=base, wrk=wrk, levels=levels, warmup=warmup, duration=duration,
                                headers={"X-Svc-Admin-Secret": ADMIN_SECRET}, log=log)
            report(results_path, "rest", rows, rest.table(rows))
            return

        if args.remote_joins:
            import remote_joins
            server = remote_joins.install_server(work, run)
            remote_port = free_port()
            remote_process = subprocess.Popen(["node", str(server), str(remote_port)],
                                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            processes.append(remote_process)
            remote_process.stdout.readline()
            remote = f"http://127.0.0.1:{remote_port}"
            remote_joins.setup(base, ADMIN_SECRET, post, remote, log)
            rows = remote_joins.measure(base=base, secret=ADMIN_SECRET, remote=remote,
                                        requests=300 if args.quick else 2000, warmup=50, log=log)
            report(results_path, "remote_joins", rows, remote_joins.table(rows))
            return

        if args.subscriptions:
            import live
            interval_ms = 1000
            client = live.install_client(work, run)
            rows = live.measure(base=base, secret=ADMIN_SECRET, pid=basalt.pid, url=url,
                                psql=pg_bin("psql"), cpu_seconds=proc_cpu_seconds, client=client,
                                counts=[int(n) for n in args.subscribers.split(",")],
                                idle=args.idle_seconds or 20, interval_ms=interval_ms,
                                rounds=5 if args.quick else 10, round_rows=100, log=log)
            report(results_path, "subscriptions", rows, live.table(rows, interval_ms))
            return

        # The HTTP floor: the hand-written statement of each query behind a minimal server.
        routes = pathlib.Path(work) / "http-floor-routes.json"
        routes.write_text(json.dumps([
            {"query": q["basalt"], "sql": q["handwritten"],
             "params": [{"header": q["var"]["session"]} if q["var"].get("session") else {"variable": q["var"]["name"]}]}
            for q in queries]))
        floor_port = free_port()
        floor_server = subprocess.Popen(
            [str(release_dir() / "http-floor"), url, str(floor_port), str(routes), str(args.pool_size)],
            stdout=open(pathlib.Path(work) / "http-floor.log", "w"), stderr=subprocess.STDOUT)
        processes.append(floor_server)
        floor_base = f"http://127.0.0.1:{floor_port}"
        wait_http(f"{floor_base}/healthz", "http-floor")
        log("HTTP floor server running")

        pg_base = None
        if postgraphile_dir:
            pg_port = free_port()
            pg_log = open(pathlib.Path(work) / "postgraphile.log", "w")
            postgraphile = subprocess.Popen(
                [str(postgraphile_dir / "node_modules" / ".bin" / "postgraphile"), "-c", url,
                 "--schema", "public", "--host", "127.0.0.1", "--port", str(pg_port),
                 "--append-plugins", "@graphile/pg-aggregates", "--disable-query-log",
                 "--dynamic-json", "--no-setof-functions-contain-nulls", "--legacy-relations", "omit"],
                cwd=postgraphile_dir, stdout=pg_log, stderr=subprocess.STDOUT,
                env=dict(os.environ, NODE_ENV="production"))
            processes.append(postgraphile)
            pg_base = f"http://127.0.0.1:{pg_port}"
            wait_http(f"{pg_base}/graphql", "postgraphile", seconds=120)
            log("PostGraphile running (production flags)")

        # Queries, their floor scripts, and the correctness check.
        floor_dir = HERE / "floor"
        scripts = {}
        for q in queries:
            q["text"] = q["basalt"]
            headers = {"X-Svc-Admin-Secret": ADMIN_SECRET}
            if q.get("role"):
                headers["X-Svc-Role"] = q["role"]
            q["headers"] = headers
            committed = floor_dir / f"{q['name']}.sql"
            if q["text"].lstrip().startswith("mutation"):
                scripts[q["name"]] = committed  # hand-written: explain covers queries only
            else:
                generated = floor_script(q, explain(base, q))
                if args.write_floor:
                    committed.write_text(generated)
                elif not committed.exists() or committed.read_text() != generated:
                    sys.exit(f"bench: {committed} no longer matches the SQL explain returns; "
                             "review and run bench/run.sh --write-floor")
                scripts[q["name"]] = committed
            mid = (q["var"]["min"] + q["var"]["max"]) // 2
            b_headers = dict(headers)
            variables = {}
            if q["var"].get("session"):
                b_headers[q["var"]["session"]] = str(mid)
            else:
                variables[q["var"]["name"]] = mid
            b = post(f"{base}/v1/graphql", {"query": q["basalt"], "variables": variables}, b_headers)
            if compared_base:
                c = post(f"{compared_base}/v1/graphql", {"query": q["basalt"], "variables": variables}, b_headers)
                problem = check_answers(q, b, c, None)
                if problem:
                    sys.exit(f"bench: the compared binary answers {q['name']} differently: {problem}")
            f = post(f"{floor_base}/v1/graphql", {"query": q["basalt"], "variables": variables}, b_headers)
            p = None
            if pg_base and q["postgraphile"]:
                p = post(f"{pg_base}/graphql", {"query": q["postgraphile"], "variables": variables})
            problem = check_answers(q, b, f, p)
            if problem:
                sys.exit(f"bench: correctness check of {q['name']} failed: {problem}")
        log("correctness: every target returns the same data for every query")

        def measure(q, conc, target, server, where):
            """One target at one point, after its warm-up: wrk's figures, the server's and
            Postgres's CPU, and for Basalt how many requests were shared or declined sharing."""
            wrk(f"{where}/v1/graphql", q, conc, warmup, q["headers"])
            cpu, pg_cpu = proc_cpu_seconds(server.pid), postgres_cpu_seconds(cluster)
            shared = shared_counters(where) if target in ("basalt", "compared") else None
            figures = wrk(f"{where}/v1/graphql", q, conc, duration, q["headers"])
            if shared:
                after = shared_counters(where)
                # Requests answered by a shared statement, and requests that ran alone because
                # sharing did not pay for their plan.
                figures["shared"] = after[0] - shared[0]
                figures["declined"] = after[1] - shared[1]
            figures["cpu_s"] = proc_cpu_seconds(server.pid) - cpu
            figures["pg_cpu_s"] = postgres_cpu_seconds(cluster) - pg_cpu
            return figures

        rows = []
        measuring = time.time()
        cpu_total = 0.0
        with open(results_path, "w") as jsonl:
            points = [(q, conc) for q in queries for conc in levels]
            for point, (q, conc) in enumerate(points):
                row = {"query": q["name"], "concurrency": conc}
                # Basalt and the compared build in turns, the first place alternating from
                # round to round and from point to point; then the HTTP floor
                pair = [("compared", compared, compared_base)] if compared else []
                pair.append(("basalt", basalt, base))
                measured = {"basalt": [], "compared": []}
                for turn in range(args.rounds if compared else 1):
                    for target, server, where in (pair if (turn + point) % 2 == 0 else pair[::-1]):
                        measured[target].append(measure(q, conc, target, server, where))
                measured["http_floor"] = [measure(q, conc, "http_floor", floor_server, floor_base)]
                for target, runs in measured.items():
                    if runs:
                        row[target] = combine(runs)
                if compared:
                    # Each round's two builds ran back to back, under the same load.
                    row["basalt_compared"] = geomean([
                        ratio(b["rps"], c["rps"]) for b, c in zip(measured["basalt"], measured["compared"])])
                cpu_total += row["basalt"]["cpu_s"]
                # The floor
                pgbench(url, scripts[q["name"]], conc, max(1, round(warmup)))
                row["floor"] = pgbench(url, scripts[q["name"]], conc, max(1, round(duration)))
                # The peer
                if pg_base and q["postgraphile"]:
                    pq = dict(q, text=q["postgraphile"])
                    wrk(f"{pg_base}/graphql", pq, conc, warmup, {})
                    row["postgraphile"] = wrk(f"{pg_base}/graphql", pq, conc, duration, {})
                row["basalt_http_floor"] = ratio(row["basalt"]["rps"], row["http_floor"]["rps"])
                if compared:
                    row["compared_http_floor"] = ratio(row["compared"]["rps"], row["http_floor"]["rps"])
                row["basalt_floor"] = ratio(row["basalt"]["rps"], row["floor"]["rps"])
                row["basalt_postgraphile"] = ratio(row["basalt"]["rps"], row.get("postgraphile", {}).get("rps"))
                jsonl.write(json.dumps(row) + "\n")
                rows.append(row)
                log(f"{q['name']:<15} c={conc:<3} basalt {row['basalt']['rps']:>9,.0f} req/s "
                    f"(p50 {row['basalt']['p50_us'] / 1000:.2f} ms, p99 {row['basalt']['p99_us'] / 1000:.2f} ms, "
                    f"shared {100 * row['basalt'].get('shared_fraction', 0):.0f}%)  "
                    f"HTTP floor {row['http_floor']['rps']:>9,.0f}  SQL floor {row['floor']['rps']:>9,.0f}"
                    + (f"  postgraphile {row['postgraphile']['rps']:>8,.0f}" if "postgraphile" in row else "")
                    + (f"  compared {row['compared']['rps']:>9,.0f}" if compared else ""))
            summary = {"measuring_seconds": time.time() - measuring, "basalt_cpu_seconds": cpu_total,
                       "basalt_peak_rss_mb": proc_peak_rss_mb(basalt.pid), "duration": duration,
                       "warmup": warmup, "pool_size": args.pool_size}
            jsonl.write(json.dumps({"summary": summary}) + "\n")

        print()
        print("| query | c | Basalt req/s | p50 ms | p99 ms | errors | HTTP floor req/s | p50 ms | p99 ms | "
              "Basalt/HTTP floor | CPU µs/req server + PG (HTTP floor → Basalt) | SQL floor req/s | Basalt/SQL floor | "
              "PostGraphile req/s | Basalt/PostGraphile |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            b, h = r["basalt"], r["http_floor"]
            pgr = r.get("postgraphile")
            print(f"| {r['query']} | {r['concurrency']} | {fmt(b['rps'])} | {fmt(b['p50_us'] / 1000, 2)} | "
                  f"{fmt(b['p99_us'] / 1000, 2)} | {b['socket_errors'] + b['status_errors']} | "
                  f"{fmt(h['rps'])} | {fmt(h['p50_us'] / 1000, 2)} | {fmt(h['p99_us'] / 1000, 2)} | "
                  f"{fmt(r['basalt_http_floor'], 2, '×')} | "
                  f"{fmt(h['cpu_us_per_request'])} + {fmt(h['pg_cpu_us_per_request'])} → "
                  f"{fmt(b['cpu_us_per_request'])} + {fmt(b['pg_cpu_us_per_request'])} | "
                  f"{fmt(r['floor']['rps'])} | {fmt(r['basalt_floor'], 2, '×')} | "
                  f"{fmt(pgr['rps']) if pgr else '–'} | {fmt(r['basalt_postgraphile'], 2, '×')} |")
        top = max(levels)
        print()
        print(f"At concurrency {top}: geometric mean Basalt/HTTP floor "
              f"{fmt(geomean([r['basalt_http_floor'] for r in rows if r['concurrency'] == top]), 2, '×')}, "
              f"Basalt/SQL floor "
              f"{fmt(geomean([r['basalt_floor'] for r in rows if r['concurrency'] == top]), 2, '×')}, "
              f"Basalt/PostGraphile "
              f"{fmt(geomean([r['basalt_postgraphile'] for r in rows if r['concurrency'] == top]), 2, '×')}. "
              f"Basalt CPU {cpu_total:.1f} s, peak RSS {summary['basalt_peak_rss_mb']:.0f} MiB. "
              f"Measuring time {summary['measuring_seconds'] / 60:.1f} min.")
        if compared:
            print()
            print("| query | c | Basalt/HTTP floor | compared/HTTP floor | Basalt/compared | "
                  "CPU µs/req server (compared → Basalt) |")
            print("|---|---:|---:|---:|---:|---:|")
            for r in rows:
                print(f"| {r['query']} | {r['concurrency']} | {fmt(r['basalt_http_floor'], 2, '×')} | "
                      f"{fmt(r['compared_http_floor'], 2, '×')} | {fmt(r['basalt_compared'], 2, '×')} | "
                      f"{fmt(r['compared']['cpu_us_per_request'])} → {fmt(r['basalt']['cpu_us_per_request'])} |")
            for level in levels:
                print(f"At concurrency {level}: geometric mean Basalt/compared "
                      f"{fmt(geomean([r['basalt_compared'] for r in rows if r['concurrency'] == level]), 3, '×')}.")
        print(f"Raw figures: {results_path.relative_to(ROOT)}")
    finally:
        stop_all(processes, timeout=10)
        cluster.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
