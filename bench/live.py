"""The subscriptions part of the benchmark (bench/run.sh --subscriptions): N live subscribers
of one query shape with distinct variables, on their own WebSockets. Measures, per N: the
engine's RSS per idle subscriber, its CPU per poll cycle (from /proc, so the load client's
share does not count), live-query statements per cycle (the engine's own counter,
`basalt_live_query_statements_total` over `basalt_live_query_polls_total` on /metrics: exact), Postgres's committed transactions per
cycle beside it (every statement of the database: live queries, and the catalog, event and
action workers' polls), and change-to-delivery latency (p50, p99). Standard library only; the
load client is bench/live.mjs (Node, `ws` from npm)."""

import json
import pathlib
import re
import subprocess
import time
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
WS_PACKAGE = "ws@8.18.0"


def rss_mb(pid):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def transactions(psql, url):
    """Committed transactions of the database so far (statistics flush about once a second)."""
    out = subprocess.run([psql, "-tAq", "-c",
                          "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()",
                          url],
                         check=True, capture_output=True, text=True).stdout.split()
    return int(out[-1])


def metrics_text(base, secret):
    """The engine's /metrics text."""
    request = urllib.request.Request(f"{base}/metrics", headers={"X-Svc-Admin-Secret": secret})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read().decode()


def live_counts(base, secret):
    """The engine's counts so far: (multiplexed live-query statements run, group polls)."""
    text = metrics_text(base, secret)
    counts = []
    for name in ("basalt_live_query_statements_total", "basalt_live_query_polls_total"):
        match = re.search(rf"^{name}\s+(\S+)", text, re.MULTILINE)
        if not match:
            raise SystemExit(f"bench: /metrics has no {name}")
        counts.append(float(match.group(1)))
    return tuple(counts)


def install_client(work, run):
    client = pathlib.Path(work) / "live-client"
    client.mkdir(exist_ok=True)
    run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(client),
         WS_PACKAGE], stdout=subprocess.DEVNULL)
    (client / "live.mjs").write_text((HERE / "live.mjs").read_text())
    return client / "live.mjs"


def measure(*, base, secret, pid, url, psql, cpu_seconds, client, counts, idle, interval_ms,
            rounds, round_rows, log):
    rows = []
    for n in counts:
        baseline_rss = rss_mb(pid)
        sockets = n  # one socket per subscriber: the per-subscriber cost includes its socket
        started = time.time()
        node = subprocess.Popen(["node", str(client), base, secret, str(n), str(sockets),
                                 str(rounds), str(round_rows)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = node.stdout.readline().strip()
        if line != "ready":
            node.kill()
            raise SystemExit(f"bench: live client for {n} subscribers failed: {line!r}")
        log(f"{n} subscribers connected and answered in {time.time() - started:.1f} s")
        time.sleep(2 * interval_ms / 1000)  # let every group settle into its polling rhythm
        rss_idle = rss_mb(pid)
        cpu0, tx0, (st0, po0), t0 = (cpu_seconds(pid), transactions(psql, url),
                                     live_counts(base, secret), time.time())
        time.sleep(idle)
        cpu1, tx1, (st1, po1), t1 = (cpu_seconds(pid), transactions(psql, url),
                                     live_counts(base, secret), time.time())
        cycles = (t1 - t0) / (interval_ms / 1000)
        node.stdin.write("go\n")
        node.stdin.flush()
        result = json.loads(node.stdout.readline())
        node.wait(timeout=60)
        row = {
            "subscribers": n,
            "sockets": sockets,
            "connect_seconds": result["connect_seconds"],
            "cpu_ms_per_cycle": (cpu1 - cpu0) * 1000 / cycles,
            "cpu_cores_idle": (cpu1 - cpu0) / (t1 - t0),
            # Per poll of the group (exact: a window of t seconds holds either floor(t) or
            # ceil(t) polls, so statements per second would be off by up to one poll's worth).
            "statements_per_cycle": (st1 - st0) / max(po1 - po0, 1),
            # Every transaction of the database, the workers' and the catalog's polls included
            # (the statistics flush about once a second: ±0.5 per cycle).
            "transactions_per_cycle": (tx1 - tx0) / cycles,
            "rss_mb_idle": rss_idle,
            "rss_kb_per_subscriber": (rss_idle - baseline_rss) * 1024 / n,
            "latency_p50_ms": result["latency_p50_ms"],
            "latency_p99_ms": result["latency_p99_ms"],
            "deliveries": result["deliveries"],
        }
        log(f"{n:>6} subscribers: {row['cpu_ms_per_cycle']:.1f} ms CPU and "
            f"{row['statements_per_cycle']:.1f} statements per cycle, "
            f"p50 {row['latency_p50_ms']:.0f} ms, p99 {row['latency_p99_ms']:.0f} ms, "
            f"{row['rss_kb_per_subscriber']:.1f} KB RSS per subscriber")
        rows.append(row)
        time.sleep(2)  # sockets closed: groups end on their next poll
    return rows


def table(rows, interval_ms):
    lines = [
        f"| subscribers | engine CPU per {interval_ms} ms cycle | engine cores (idle) | live statements per poll "
        "| Postgres transactions per cycle | change→delivery p50 | p99 | engine RSS per subscriber |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['subscribers']:,} | {r['cpu_ms_per_cycle']:.1f} ms | {r['cpu_cores_idle']:.2f} | "
                     f"{r['statements_per_cycle']:.1f} | {r.get('transactions_per_cycle', float('nan')):.1f} | "
                     f"{r['latency_p50_ms']:.0f} ms | "
                     f"{r['latency_p99_ms']:.0f} ms | {r['rss_kb_per_subscriber']:.1f} KB |")
    return "\n".join(lines)
