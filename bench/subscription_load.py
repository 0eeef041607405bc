"""The subscription load benchmark (bench/run.sh --subscription-load): 100 query shapes, each
reading its own table, with 100 subscribers per shape on their own WebSockets (10,000), each
with its own variables; a writer changes the tables of 5 shapes per second. Run twice on the
same database: change detection on (the default) and off (every cohort polled every interval,
as the reference engine does). The engine is pinned to one core (taskset); the load client
(bench/subscription-load.mjs, Node with `ws` from npm) and Postgres run on the other.

Measured per mode, each over its own window:
- idle (no writes): engine CPU (cores, from /proc), poll statements per second
  (`basalt_subscription_statements_total{kind="live"}`, cross-checked with pg_stat_statements),
  messages the clients received (0 is right);
- load (the writer running): the same, plus the skip ratio (skipped ÷ (run + skipped) from
  `basalt_subscription_cohort_polls_total`), change-to-delivery p50 and p99 (from sending the
  mutation to the message carrying its value), and missed updates (2 s after the writer stops,
  subscribers whose last message differs from what was written);
- engine RSS per idle subscriber (RSS with every subscriber connected and idle, minus RSS
  before the first connected, ÷ subscribers).
Standard library only."""

import json
import re
import subprocess
import time

from live import metrics_text, rss_mb

WS_PACKAGE = "ws@8.18.0"
SHAPES = 100
PER_SHAPE = 100
WRITES_PER_SECOND = 5


def tables_sql():
    """The shape tables: shape_00 … shape_99, one row per owner 0 … 99."""
    statements = []
    for k in range(SHAPES):
        name = f"shape_{k:02d}"
        statements.append(
            f"CREATE TABLE {name} (id int PRIMARY KEY, owner int NOT NULL, value int NOT NULL);"
            f"INSERT INTO {name} SELECT o, o, 0 FROM generate_series(0, {PER_SHAPE - 1}) AS o;"
            f"CREATE INDEX ON {name} (owner);")
    return "\n".join(statements)


def track(base, secret, post):
    ops = [{"type": "track_table", "args": {"table": f"shape_{k:02d}"}} for k in range(SHAPES)]
    for at in range(0, len(ops), 50):  # a bulk takes at most 64 operations
        answer = post(f"{base}/v1/query", {"type": "bulk", "args": ops[at:at + 50]},
                      {"X-Svc-Admin-Secret": secret})
        if not isinstance(answer, list):
            raise SystemExit(f"bench: tracking the shape tables failed: {answer}")


def install_client(work, run, here):
    import pathlib
    client = pathlib.Path(work) / "subscription-load-client"
    client.mkdir(exist_ok=True)
    run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(client),
         WS_PACKAGE], stdout=subprocess.DEVNULL)
    script = client / "subscription-load.mjs"
    script.write_text((here / "subscription-load.mjs").read_text())
    return script


def counters(base, secret):
    """(live statements, live cohorts run, live cohorts skipped) so far."""
    text = metrics_text(base, secret)

    def value(pattern):
        match = re.search(rf"^{pattern}\s+(\S+)", text, re.MULTILINE)
        return float(match.group(1)) if match else 0.0

    return (value(r'basalt_subscription_statements_total\{kind="live"\}'),
            value(r'basalt_subscription_cohort_polls_total\{kind="live",result="run"\}'),
            value(r'basalt_subscription_cohort_polls_total\{kind="live",result="skipped"\}'))


def statement_calls(psql, url):
    """Multiplexed subscription statements Postgres ran so far (pg_stat_statements)."""
    out = subprocess.run([psql, "-tAq", "-c",
                          "SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements "
                          "WHERE query LIKE '%unnest%' AND query LIKE '%\"cohort\"%'", url],
                         check=True, capture_output=True, text=True).stdout.split()
    return int(out[-1])


class Window:
    """Engine CPU, the engine's counters and Postgres's statement count over a span of time."""

    def __init__(self, pid, base, secret, psql, url, cpu_seconds):
        self.read = lambda: (cpu_seconds(pid), counters(base, secret), statement_calls(psql, url),
                             time.time())
        self.start = self.read()

    def close(self):
        (c0, (s0, r0, k0), p0, t0), (c1, (s1, r1, k1), p1, t1) = self.start, self.read()
        seconds = t1 - t0
        cohorts = (r1 - r0) + (k1 - k0)
        return {
            "seconds": seconds,
            "cpu_cores": (c1 - c0) / seconds,
            "statements_per_second": (s1 - s0) / seconds,
            "pg_statements_per_second": (p1 - p0) / seconds,
            "skip_ratio": (k1 - k0) / cohorts if cohorts else None,
        }


def measure(*, mode, start_engine, stop_engine, secret, url, psql, cpu_seconds, client,
            idle_seconds, load_seconds, log):
    """One mode: start the engine, connect every subscriber, measure idle then under load."""
    process, port = start_engine(mode)
    base = f"http://127.0.0.1:{port}"
    time.sleep(2)
    baseline_rss = rss_mb(process.pid)
    node = subprocess.Popen(["taskset", "-c", "1", "node", str(client), base, secret, str(SHAPES),
                             str(PER_SHAPE), str(WRITES_PER_SECOND), str(load_seconds)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = node.stdout.readline().strip()
    if line != "ready":
        node.kill()
        raise SystemExit(f"bench: subscription load client failed: {line!r}")
    log(f"change detection {mode}: {SHAPES * PER_SHAPE} subscribers connected and answered")
    time.sleep(3)  # every group in its polling rhythm
    rss_idle = rss_mb(process.pid)
    window = Window(process.pid, base, secret, psql, url, cpu_seconds)
    time.sleep(idle_seconds)
    idle = window.close()
    node.stdin.write("idle\n")
    node.stdin.flush()
    idle["messages"] = json.loads(node.stdout.readline())["messages"]
    log(f"change detection {mode}, idle {idle_seconds:.0f} s: {idle['statements_per_second']:.1f} "
        f"statements/s, {idle['cpu_cores']:.2f} cores")
    window = Window(process.pid, base, secret, psql, url, cpu_seconds)
    node.stdin.write("go\n")
    node.stdin.flush()
    result = json.loads(node.stdout.readline())
    load = window.close()
    node.wait(timeout=60)
    log(f"change detection {mode}, load {load_seconds:.0f} s: {load['statements_per_second']:.1f} "
        f"statements/s, {load['cpu_cores']:.2f} cores, p99 {result['latency_p99_ms']:.0f} ms, "
        f"missed {result['missed']}")
    stop_engine(process)
    return {
        "change_detection": mode,
        "subscribers": result["subscribers"],
        "connect_seconds": result["connect_seconds"],
        "rss_kb_per_idle_subscriber": (rss_idle - baseline_rss) * 1024 / result["subscribers"],
        "idle": idle,
        "load": dict(load, **{k: result[k] for k in (
            "writes", "deliveries", "undelivered_30s", "latency_p50_ms", "latency_p99_ms",
            "latency_max_ms", "over_2s", "missed", "messages")}),
    }


def table(rows):
    lines = [
        "| change detection | window | engine cores | poll statements/s (pg_stat_statements) "
        "| skip ratio | change→delivery p50 / p99 | missed | engine RSS per idle subscriber |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        for name in ("idle", "load"):
            w = r[name]
            skip = "–" if w["skip_ratio"] is None else f"{w['skip_ratio']:.3f}"
            latency = (f"{w['latency_p50_ms']:.0f} / {w['latency_p99_ms']:.0f} ms"
                       if name == "load" and w.get("latency_p99_ms") is not None else "–")
            missed = str(w["missed"]) if name == "load" else "–"
            rss = f"{r['rss_kb_per_idle_subscriber']:.1f} KB" if name == "idle" else ""
            lines.append(
                f"| {r['change_detection']} | {name} ({w['seconds']:.0f} s) | {w['cpu_cores']:.2f} | "
                f"{w['statements_per_second']:.1f} ({w['pg_statements_per_second']:.1f}) | {skip} | "
                f"{latency} | {missed} | {rss} |")
    return "\n".join(lines)
