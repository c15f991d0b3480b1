// npm run schemas: writes the OpenAPI document (schemas/openapi.json) and the JSON Schema files for
// the wire contract, manifests, event payloads and read models (schemas/json/), generated from the
// TypeBox schemas that are their single source; and the API reference page docs/reference/api.md.
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { docFiles, schemaFiles } from './schema-files.ts';

const root = fileURLToPath(new URL('../schemas/', import.meta.url));
const repo = fileURLToPath(new URL('../', import.meta.url));
const files = schemaFiles();
await mkdir(root + 'json', { recursive: true });
for (const [name, text] of Object.entries(files)) await writeFile(root + name, text);
for (const [path, text] of Object.entries(docFiles())) await writeFile(repo + path, text);
process.stdout.write(`wrote ${Object.keys(files).length} files to schemas/ (openapi.json, json/*.json) and ${Object.keys(docFiles()).join(', ')}\n`);
