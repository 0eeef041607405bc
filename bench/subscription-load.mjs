// Load client of the subscription load benchmark (bench/subscription_load.py drives it).
// Holds SHAPES × PER_SHAPE WebSockets (graphql-transport-ws, spoken here over the `ws` package),
// one subscription each: subscriber (k, o) watches the rows of table shape_k whose owner is o,
// so every subscriber has its own variables. Prints `ready` once every first result arrived.
//
// On `idle` it prints the messages received since `ready` (nothing changed, so 0 is right).
// On `go` it runs the writer for LOAD_SECONDS: each second, WRITES tables chosen at random get
// one row incremented (a random owner's) over HTTP, and the arrival of the new value at that
// row's subscriber is timed from the moment the mutation was sent. Two seconds after the
// writer's last write it compares every subscriber's last message with the values it wrote,
// waits for the deliveries still outstanding, and prints one JSON line: deliveries, latency
// p50/p99/max and how many took over 2 s, misses, messages received.
//
// Usage: node subscription-load.mjs <http base> <admin secret> <shapes> <per shape> <writes/s> <load seconds>
import WebSocket from 'ws';
import readline from 'node:readline';

const [base, secret, shapesArg, perShapeArg, writesArg, loadArg] = process.argv.slice(2);
const SHAPES = Number(shapesArg);
const PER_SHAPE = Number(perShapeArg);
const WRITES = Number(writesArg);
const LOAD_SECONDS = Number(loadArg);
const url = base.replace('http://', 'ws://') + '/v1/graphql';
const table = (k) => `shape_${String(k).padStart(2, '0')}`;

// Per subscriber `${k}:${o}`: the last value it was sent, and the writes waiting to be seen.
const last = new Map();
const waiting = new Map();
let messages = 0;
let firstCount = 0;
let allFirst;
const allFirstDone = new Promise((r) => (allFirst = r));

function open(k, o) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, 'graphql-transport-ws', { perMessageDeflate: false });
    const key = `${k}:${o}`;
    ws.on('error', reject);
    ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: { headers: { 'X-Svc-Admin-Secret': secret } } })));
    ws.on('message', (raw) => {
      const m = JSON.parse(raw);
      if (m.type === 'connection_ack') {
        const query = `subscription ($o: Int!) { ${table(k)}(where: {owner: {_eq: $o}}) { id value } }`;
        ws.send(JSON.stringify({ type: 'subscribe', id: '1', payload: { query, variables: { o } } }));
        resolve(ws);
      } else if (m.type === 'ping') {
        ws.send(JSON.stringify({ type: 'pong' }));
      } else if (m.type === 'next') {
        messages += 1;
        const rows = m.payload?.data?.[table(k)] ?? [];
        const value = rows.length ? rows[0].value : null;
        if (!last.has(key)) {
          firstCount += 1;
          if (firstCount === SHAPES * PER_SHAPE) allFirst();
        }
        last.set(key, value);
        const waiters = waiting.get(key);
        if (waiters) {
          const now = performance.now();
          for (const w of waiters.filter((w) => value >= w.value)) w.resolve(now - w.sent);
          const rest = waiters.filter((w) => value < w.value);
          if (rest.length) waiting.set(key, rest);
          else waiting.delete(key);
        }
      } else if (m.type === 'error') {
        console.error(JSON.stringify(m));
        process.exit(1);
      }
    });
  });
}

async function increment(k, o) {
  const response = await fetch(base + '/v1/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'X-Svc-Admin-Secret': secret },
    body: JSON.stringify({
      query: `mutation ($o: Int!) { update_${table(k)}(where: {owner: {_eq: $o}}, _inc: {value: 1}) { affected_rows } }`,
      variables: { o },
    }),
  });
  const body = await response.json();
  if (body.errors) throw new Error(JSON.stringify(body.errors));
}

function percentile(sorted, p) {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : null;
}

const started = performance.now();
const sockets = [];
const all = [];
for (let k = 0; k < SHAPES; k++) for (let o = 0; o < PER_SHAPE; o++) all.push([k, o]);
for (let s = 0; s < all.length; s += 200) {
  sockets.push(...(await Promise.all(all.slice(s, s + 200).map(([k, o]) => open(k, o)))));
}
await allFirstDone;
const connectSeconds = (performance.now() - started) / 1000;
// What each subscriber must end at: its first value (a run before may have written), plus the
// writes below.
const expected = new Map(all.map(([k, o]) => [`${k}:${o}`, last.get(`${k}:${o}`)]));
console.log('ready');
messages = 0;

const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  const command = line.trim();
  if (command === 'idle') {
    console.log(JSON.stringify({ messages }));
    messages = 0;
  }
  if (command === 'go') break;
}

const latencies = [];
const pending = [];
let late = 0;
const writerStart = performance.now();
for (let second = 0; second < LOAD_SECONDS; second++) {
  const tick = writerStart + second * 1000;
  await new Promise((r) => setTimeout(r, Math.max(0, tick - performance.now())));
  const shapes = new Set();
  while (shapes.size < Math.min(WRITES, SHAPES)) shapes.add(Math.floor(Math.random() * SHAPES));
  for (const k of shapes) {
    const o = Math.floor(Math.random() * PER_SHAPE);
    const key = `${k}:${o}`;
    const value = expected.get(key) + 1;
    expected.set(key, value);
    const arrived = new Promise((resolve) => {
      const waiter = { value, sent: performance.now(), resolve };
      waiting.set(key, [...(waiting.get(key) ?? []), waiter]);
    });
    pending.push(
      increment(k, o).then(() => new Promise((settled) => {
        const timer = setTimeout(() => { late += 1; settled(); }, 30000);
        arrived.then((ms) => { clearTimeout(timer); latencies.push(ms); settled(); });
      })),
    );
  }
}
// Two seconds after the last write, every subscriber must show what was written.
await new Promise((r) => setTimeout(r, 2000));
let missed = 0;
for (const [key, value] of expected) {
  if (last.get(key) !== value) missed += 1;
}
await Promise.all(pending);
latencies.sort((a, b) => a - b);
console.log(JSON.stringify({
  subscribers: all.length,
  connect_seconds: connectSeconds,
  writes: latencies.length + late,
  deliveries: latencies.length,
  undelivered_30s: late,
  latency_p50_ms: percentile(latencies, 50),
  latency_p99_ms: percentile(latencies, 99),
  latency_max_ms: latencies.length ? latencies[latencies.length - 1] : null,
  over_2s: latencies.filter((ms) => ms > 2000).length,
  missed,
  messages,
}));
for (const ws of sockets) ws.terminate();
process.exit(0);
