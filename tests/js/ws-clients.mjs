// Drives Basalt's WebSocket transport with the real client libraries: `graphql-ws` (protocol
// graphql-transport-ws) and `subscriptions-transport-ws` (Apollo's graphql-ws). For each: a
// subscription gets its first result, a mutation over HTTP changes the row, the subscription
// gets the new result; a query over the socket answers once; a stream sends the rows after its
// cursor in batches. Prints one JSON summary line.
//
// Usage: node ws-clients.mjs <http base url> <admin secret>
import WebSocket from 'ws';
import { createClient } from 'graphql-ws';
import { SubscriptionClient } from 'subscriptions-transport-ws';

const [base, secret] = process.argv.slice(2);
const wsUrl = base.replace('http://', 'ws://') + '/v1/graphql';
const headers = { 'X-Svc-Admin-Secret': secret };
const SUBSCRIPTION = 'subscription ($id: Int!) { author_by_pk(id: $id) { name } }';
// The authors after id 1, two per batch: the first batch is [2, 3].
const STREAM = 'subscription { author_stream(batch_size: 2, cursor: {initial_value: {id: 1}}) { id } }';

async function rename(name) {
  const response = await fetch(base + '/v1/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({
      query: 'mutation ($name: String!) { update_author(where: {id: {_eq: 1}}, _set: {name: $name}) { affected_rows } }',
      variables: { name },
    }),
  });
  const body = await response.json();
  if (body.errors) throw new Error(JSON.stringify(body.errors));
}

function withTimeout(promise, what) {
  return Promise.race([
    promise,
    new Promise((_, reject) => setTimeout(() => reject(new Error(`timeout: ${what}`)), 10000)),
  ]);
}

// Collects results of an observable-like subscription until `count` arrived.
function collect(start, count) {
  return new Promise((resolve, reject) => {
    const seen = [];
    const stop = start({
      next: (value) => {
        seen.push(value);
        if (seen.length === count) {
          stop();
          resolve(seen);
        }
      },
      error: (err) => reject(err instanceof Error ? err : new Error(JSON.stringify(err))),
      complete: () => {},
    });
  });
}

async function graphqlWs() {
  const client = createClient({ url: wsUrl, webSocketImpl: WebSocket, connectionParams: { headers }, lazy: true });
  const results = collect(
    (sink) => client.subscribe({ query: SUBSCRIPTION, variables: { id: 1 } }, sink),
    2,
  );
  await new Promise((r) => setTimeout(r, 500));
  await rename('Ann (graphql-ws)');
  const subscription = await withTimeout(results, 'graphql-ws subscription');
  const query = await withTimeout(
    collect((sink) => client.subscribe({ query: '{ articleById(id: 1) { title } }' }, sink), 1),
    'graphql-ws query',
  );
  const stream = await withTimeout(
    collect((sink) => client.subscribe({ query: STREAM }, sink), 1),
    'graphql-ws stream',
  );
  await client.dispose();
  return { subscription, query, stream };
}

async function apollo() {
  const client = new SubscriptionClient(wsUrl, { connectionParams: { headers }, reconnect: false }, WebSocket);
  const results = collect((sink) => {
    const s = client.request({ query: SUBSCRIPTION, variables: { id: 1 } }).subscribe(sink);
    return () => s.unsubscribe();
  }, 2);
  await new Promise((r) => setTimeout(r, 500));
  await rename('Ann (apollo)');
  const subscription = await withTimeout(results, 'apollo subscription');
  const query = await withTimeout(
    collect((sink) => {
      const s = client.request({ query: '{ articleById(id: 1) { title } }' }).subscribe(sink);
      return () => s.unsubscribe();
    }, 1),
    'apollo query',
  );
  const stream = await withTimeout(
    collect((sink) => {
      const s = client.request({ query: STREAM }).subscribe(sink);
      return () => s.unsubscribe();
    }, 1),
    'apollo stream',
  );
  client.close();
  return { subscription, query, stream };
}

try {
  const summary = { graphqlWs: await graphqlWs(), apollo: await apollo() };
  console.log(JSON.stringify(summary));
  process.exit(0);
} catch (err) {
  console.error(err.stack || String(err));
  process.exit(1);
}
