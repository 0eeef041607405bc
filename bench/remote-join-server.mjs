// The remote GraphQL service of the remote-join benchmark (bench/remote_joins.py): graphql-js
// executing `type Query { badge(id: Int!): Badge }`, `type Badge { id: Int! label: String! }`
// with in-memory resolvers, so it answers a 50-alias request in well under a millisecond.
// GET /stats reports the GraphQL requests received (introspection left out).
// usage: node remote-join-server.mjs <port>
import http from 'node:http';
import { buildSchema, graphql } from 'graphql';

const port = Number(process.argv[2]);
const schema = buildSchema(`
  type Badge { id: Int! label: String! }
  type Query { badge(id: Int!): Badge }
`);
const rootValue = { badge: ({ id }) => ({ id, label: `badge-${id}` }) };
let requests = 0;

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ requests }));
    return;
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', async () => {
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString());
    } catch (e) {
      res.writeHead(400);
      res.end('not JSON');
      return;
    }
    if (!String(body.query).includes('__schema')) requests += 1;
    const answer = await graphql({
      schema, source: body.query, rootValue, variableValues: body.variables,
      operationName: body.operationName,
    });
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(answer));
  });
});
server.keepAliveTimeout = 60_000;
server.listen(port, '127.0.0.1', () => process.stdout.write('ready\n'));
