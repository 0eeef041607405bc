// Reads an introspection result (the `data` of an IntrospectionQuery) from stdin and checks it
// with graphql-js: the schema must build and validate without errors. Prints a summary line.
import { buildClientSchema, validateSchema, getIntrospectionQuery } from 'graphql';

if (process.argv[2] === '--query') {
  process.stdout.write(getIntrospectionQuery({ descriptions: true, specifiedByUrl: false, inputValueDeprecation: false }));
  process.exit(0);
}
let input = '';
for await (const chunk of process.stdin) input += chunk;
const data = JSON.parse(input);
const schema = buildClientSchema(data);
const errors = validateSchema(schema);
if (errors.length > 0) {
  console.error(errors.map((e) => e.message).join('\n'));
  process.exit(1);
}
const types = Object.keys(schema.getTypeMap()).filter((n) => !n.startsWith('__'));
console.log(JSON.stringify({
  ok: true,
  types: types.length,
  query: schema.getQueryType().name,
  subscription: schema.getSubscriptionType()?.name ?? null,
}));
