// Load client of the subscriptions benchmark (bench/live.py drives it). Opens SOCKETS WebSockets
// (graphql-transport-ws) carrying SUBSCRIBERS subscriptions of one query shape with distinct
// variables (author ids 1…), waits for every first result and prints `ready`. On a `go` line
// on stdin it measures change-to-delivery latency: each round renames ROUND_ROWS authors over
// HTTP and times, per affected subscriber, the arrival of the new name. Prints one JSON line.
//
// Usage: node live.mjs <http base> <admin secret> <subscribers> <sockets> <rounds> <round rows>
import WebSocket from 'ws';
import readline from 'node:readline';

const [base, secret, subscribersArg, socketsArg, roundsArg, rowsArg] = process.argv.slice(2);
const SUBSCRIBERS = Number(subscribersArg);
const SOCKETS = Number(socketsArg);
const ROUNDS = Number(roundsArg);
const ROUND_ROWS = Number(rowsArg);
const AUTHORS = 10000;
const QUERY = 'subscription ($id: Int!) { author_by_pk(id: $id) { id name } }';
const url = base.replace('http://', 'ws://') + '/v1/graphql';

// Per subscriber: its author id and a callback for the next result.
const waiting = new Map(); // subscription key -> resolve(name)
const firstSeen = new Set();
let allFirst;
const allFirstDone = new Promise((r) => (allFirst = r));

function open(index, ids) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, 'graphql-transport-ws');
    ws.on('error', reject);
    ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: { headers: { 'X-Svc-Admin-Secret': secret } } })));
    ws.on('message', (raw) => {
      const m = JSON.parse(raw);
      if (m.type === 'connection_ack') {
        for (const id of ids) {
          ws.send(JSON.stringify({ type: 'subscribe', id: String(id), payload: { query: QUERY, variables: { id } } }));
        }
        resolve(ws);
      } else if (m.type === 'ping') {
        ws.send(JSON.stringify({ type: 'pong' }));
      } else if (m.type === 'next') {
        const key = `${index}:${m.id}`;
        if (!firstSeen.has(key)) {
          firstSeen.add(key);
          if (firstSeen.size === SUBSCRIBERS) allFirst();
        }
        const done = waiting.get(key);
        const name = m.payload?.data?.author_by_pk?.name;
        if (done && done.name === name) {
          waiting.delete(key);
          done.resolve(performance.now());
        }
      } else if (m.type === 'error') {
        console.error(JSON.stringify(m));
        process.exit(1);
      }
    });
  });
}

async function rename(ids, name) {
  const response = await fetch(base + '/v1/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'X-Svc-Admin-Secret': secret },
    body: JSON.stringify({
      query: 'mutation ($ids: [Int!]!, $name: String!) { update_author(where: {id: {_in: $ids}}, _set: {name: $name}) { affected_rows } }',
      variables: { ids, name },
    }),
  });
  const body = await response.json();
  if (body.errors) throw new Error(JSON.stringify(body.errors));
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

// Subscriber i (0-based) watches author (i % AUTHORS) + 1 on socket i % SOCKETS.
const perSocket = Array.from({ length: SOCKETS }, () => []);
for (let i = 0; i < SUBSCRIBERS; i++) perSocket[i % SOCKETS].push(i);
const started = performance.now();
const sockets = [];
for (let s = 0; s < SOCKETS; s += 200) {
  const batch = [];
  for (let k = s; k < Math.min(SOCKETS, s + 200); k++) {
    batch.push(open(k, perSocket[k].map((i) => (i % AUTHORS) + 1)));
  }
  sockets.push(...(await Promise.all(batch)));
}
await allFirstDone;
const connectSeconds = (performance.now() - started) / 1000;
console.log('ready');

const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  if (line.trim() === 'go') break;
}

const latencies = [];
for (let round = 0; round < ROUNDS; round++) {
  // The first ROUND_ROWS authors of this round's slice; every subscriber of them must see it.
  const ids = Array.from({ length: ROUND_ROWS }, (_, k) => ((round * ROUND_ROWS + k) % Math.min(AUTHORS, SUBSCRIBERS)) + 1);
  const name = `round-${round}-${Date.now()}`;
  const arrivals = [];
  for (let i = 0; i < SUBSCRIBERS; i++) {
    const author = (i % AUTHORS) + 1;
    if (!ids.includes(author)) continue;
    const key = `${i % SOCKETS}:${author}`;
    arrivals.push(new Promise((resolve) => waiting.set(key, { name, resolve })));
  }
  const t0 = performance.now();
  await rename(ids, name);
  const times = await Promise.race([
    Promise.all(arrivals),
    new Promise((_, reject) => setTimeout(() => reject(new Error(`round ${round}: not delivered in 30 s`)), 30000)),
  ]);
  for (const t of times) latencies.push(t - t0);
  // A random pause, so changes land at every phase of the poll cycle.
  await new Promise((r) => setTimeout(r, 300 + Math.random() * 1000));
}
latencies.sort((a, b) => a - b);
console.log(JSON.stringify({
  subscribers: SUBSCRIBERS,
  sockets: SOCKETS,
  connect_seconds: connectSeconds,
  deliveries: latencies.length,
  latency_p50_ms: percentile(latencies, 50),
  latency_p99_ms: percentile(latencies, 99),
}));
for (const ws of sockets) ws.terminate();
process.exit(0);
