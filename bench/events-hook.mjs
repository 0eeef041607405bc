// The webhook of the events benchmark (bench/events.py): answers 200 at once, counts deliveries
// of distinct events, and measures capture-to-delivery latency from each event's `created_at`
// (the database's clock; same machine). GET /stats reports, POST /reset starts over.
// usage: node events-hook.mjs <port>
import http from 'node:http';

const port = Number(process.argv[2]);
let seen = new Set();
let latencies = [];
let first = 0;
let last = 0;
let requests = 0;

function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    const sorted = Float64Array.from(latencies).sort();
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({
      distinct: seen.size, requests, first, last,
      p50_ms: percentile(sorted, 50), p99_ms: percentile(sorted, 99), max_ms: percentile(sorted, 100),
    }));
    return;
  }
  if (req.method === 'POST' && req.url === '/reset') {
    seen = new Set(); latencies = []; first = 0; last = 0; requests = 0;
    res.writeHead(200); res.end('{}');
    return;
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const now = Date.now();
    requests += 1;
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString());
      if (!seen.has(body.id)) {
        seen.add(body.id);
        latencies.push(now - Date.parse(body.created_at));
      }
    } catch (e) { /* counted as a request only */ }
    if (first === 0) first = now;
    last = now;
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end('{"ok":true}');
  });
});
server.keepAliveTimeout = 60_000;
server.listen(port, '127.0.0.1', () => process.stdout.write('ready\n'));
