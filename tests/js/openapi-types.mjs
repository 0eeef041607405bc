// Generates TypeScript types from an OpenAPI document with openapi-typescript, as docs/rest.md
// shows: reads the document on stdin, prints the generated source.
import openapiTS, { astToString } from 'openapi-typescript';

let input = '';
for await (const chunk of process.stdin) input += chunk;
const ast = await openapiTS(JSON.parse(input));
process.stdout.write(astToString(ast));
