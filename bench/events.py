"""The event-trigger part of the benchmark (bench/run.sh --events). A table with an insert
trigger pointing at a local webhook (bench/events-hook.mjs, Node); measures, with 1 and then
2 engine replicas on one database:
- throughput: a backlog of N row changes inserted at once, delivered as fast as the replicas
  can; events per second between the first and the last delivery;
- latency: rows inserted at a steady rate (pgbench --rate) at half the 1-replica throughput;
  capture-to-delivery p50 and p99 (capture time is the event's `created_at`);
and, with the 2 replicas, scheduled events: 1,000 one-off events due at the same second,
seconds from that second to the last delivery, duplicates and lost ones.
Standard library only."""

import json
import math
import pathlib
import subprocess
import time
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent


def http_json(url, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="GET" if body is None else "POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"{}")


def wait_for(hook, n, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        stats = http_json(f"{hook}/stats")
        if stats["distinct"] >= n:
            return stats
        time.sleep(0.2)
    raise SystemExit(f"bench: only {http_json(hook + '/stats')['distinct']} of {n} events delivered")


def setup(base, secret, post, hook, psql, url, run):
    run([psql, "-q", "-v", "ON_ERROR_STOP=1", "-c",
         "CREATE TABLE IF NOT EXISTS bench_event (id bigserial PRIMARY KEY, body text NOT NULL)", url],
        stdout=subprocess.DEVNULL)
    answer = post(f"{base}/v1/query", {"type": "bulk", "args": [
        {"type": "track_table", "args": {"table": "bench_event"}},
        {"type": "create_event_trigger", "args": {
            "name": "bench_event_inserted", "table": "bench_event", "webhook": f"{hook}/hook",
            "insert": {"columns": "*"}, "retry_conf": {"num_retries": 3, "interval_sec": 1}}},
    ]}, {"X-Svc-Admin-Secret": secret})
    if not isinstance(answer, list):
        raise SystemExit(f"bench: event trigger setup failed: {answer}")


def throughput(hook, psql, url, run, n):
    http_json(f"{hook}/reset", {})
    run([psql, "-q", "-c", f"INSERT INTO bench_event (body) SELECT 'x' FROM generate_series(1, {n})", url],
        stdout=subprocess.DEVNULL)
    stats = wait_for(hook, n, 600)
    seconds = max((stats["last"] - stats["first"]) / 1000, 1e-3)
    return {"events": n, "seconds": seconds, "events_per_second": n / seconds,
            "duplicates": stats["requests"] - stats["distinct"]}


def latency(hook, work, url, rate, seconds, pgbench):
    http_json(f"{hook}/reset", {})
    script = pathlib.Path(work) / "insert_event.sql"
    script.write_text("INSERT INTO bench_event (body) VALUES ('x');\n")
    subprocess.run([pgbench, "-n", "-f", str(script), "-R", str(rate), "-T", str(seconds), "-c", "4", "-j", "2",
                    url], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(2)
    stats = http_json(f"{hook}/stats")
    return {"rate": rate, "seconds": seconds, "events": stats["distinct"],
            "p50_ms": stats["p50_ms"], "p99_ms": stats["p99_ms"], "max_ms": stats["max_ms"]}


def scheduled_burst(hook, base, secret, post, n, lead=5):
    """n one-off scheduled events due at one second `lead` seconds ahead, delivered by the
    replicas running: seconds from that second to the last delivery, duplicates, lost."""
    http_json(f"{hook}/reset", {})
    due = math.ceil(time.time()) + lead
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(due))
    for start in range(0, n, 64):
        batch = [{"type": "create_scheduled_event", "args": {"webhook": f"{hook}/hook", "schedule_at": at}}
                 for _ in range(start, min(n, start + 64))]
        answer = post(f"{base}/v1/query", {"type": "bulk", "args": batch}, {"X-Svc-Admin-Secret": secret})
        if not isinstance(answer, list):
            raise SystemExit(f"bench: scheduling failed: {answer}")
    if time.time() > due:
        raise SystemExit("bench: scheduling the events took longer than their lead time")
    wait_for(hook, n, 60)
    time.sleep(1)  # a late second delivery, if any, is counted too
    stats = http_json(f"{hook}/stats")
    return {"events": n, "seconds": stats["last"] / 1000 - due,
            "duplicates": stats["requests"] - stats["distinct"], "lost": n - stats["distinct"]}


def measure(*, base, secret, post, psql, pgbench, url, run, work, start_replica, free_port, log,
            backlog, latency_seconds):
    port = free_port()
    node = subprocess.Popen(["node", str(HERE / "events-hook.mjs"), str(port)], stdout=subprocess.PIPE, text=True)
    if node.stdout.readline().strip() != "ready":
        raise SystemExit("bench: the events webhook did not start")
    hook = f"http://127.0.0.1:{port}"
    try:
        setup(base, secret, post, hook, psql, url, run)
        rows = []
        one = throughput(hook, psql, url, run, backlog)
        log(f"1 replica: {one['events_per_second']:.0f} events/s")
        rate = max(int(one["events_per_second"] / 2), 1)
        lat_one = latency(hook, work, url, rate, latency_seconds, pgbench)
        log(f"1 replica at {rate}/s: p99 {lat_one['p99_ms']} ms")
        rows.append({"replicas": 1, **one, "latency": lat_one})
        start_replica()
        time.sleep(2)
        two = throughput(hook, psql, url, run, backlog)
        log(f"2 replicas: {two['events_per_second']:.0f} events/s")
        lat_two = latency(hook, work, url, rate, latency_seconds, pgbench)
        rows.append({"replicas": 2, **two, "latency": lat_two})
        burst = scheduled_burst(hook, base, secret, post, 1000)
        log(f"2 replicas, 1000 scheduled events due at once: last delivered after {burst['seconds']:.2f} s, "
            f"{burst['duplicates']} duplicates, {burst['lost']} lost")
        rows.append({"replicas": 2, "scheduled": burst})
        return rows
    finally:
        node.kill()


def table(rows):
    lines = ["| replicas | backlog | events/s (throughput) | duplicates | steady rate | p50 capture→2xx | p99 | max |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if "scheduled" in r:
            continue
        lat = r["latency"]
        lines.append(f"| {r['replicas']} | {r['events']} | {r['events_per_second']:.0f} | {r['duplicates']} | "
                     f"{lat['rate']}/s | {lat['p50_ms']:.0f} ms | {lat['p99_ms']:.0f} ms | {lat['max_ms']:.0f} ms |")
    for r in rows:
        if "scheduled" in r:
            b = r["scheduled"]
            lines += ["", "| replicas | scheduled events due at one second | last delivered after | duplicates | lost |",
                      "|---:|---:|---:|---:|---:|",
                      f"| {r['replicas']} | {b['events']} | {b['seconds']:.2f} s | {b['duplicates']} | {b['lost']} |"]
    return "\n".join(lines)
