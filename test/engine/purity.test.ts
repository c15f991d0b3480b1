// docs/internals/design.md §1 and §6: the engine is a pure function. It imports nothing that does I/O and reads no clock.
import test from 'ava';
import { readdirSync, readFileSync } from 'node:fs';

const engineDir = new URL('../../src/engine/', import.meta.url);
const sources = readdirSync(engineDir)
  .filter((name) => name.endsWith('.ts'))
  .map((name) => ({ name, text: readFileSync(new URL(name, engineDir), 'utf8') }));

const ALLOWED_PACKAGES = new Set(['luxon']);
const IMPORT = /\b(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)|\brequire\s*\(/g;

test('the engine has source files to check', (t) => {
  t.true(sources.length >= 8);
  t.true(sources.some(({ name }) => name === 'decide.ts'));
});

test('the engine imports only its own files and luxon', (t) => {
  for (const { name, text } of sources) {
    for (const match of text.matchAll(IMPORT)) {
      const specifier = match[1] ?? match[2];
      t.truthy(specifier, `${name}: require() or a computed import`);
      const ok = (specifier.startsWith('./') && specifier.endsWith('.ts')) || ALLOWED_PACKAGES.has(specifier);
      t.true(ok, `${name} imports ${specifier}`);
      t.false(/^(?:mongodb|koa|@koa\/|agenda|@agendajs\/|node:|fs|net|http|https|child_process|undici)/.test(specifier), `${name} imports ${specifier}`);
    }
  }
});

test('the engine reads no clock and draws no random numbers', (t) => {
  for (const { name, text } of sources) {
    t.false(/Date\.now\s*\(|new Date\s*\(\s*\)|Math\.random|performance\.now|crypto\.|DateTime\.(?:now|local)\s*\(|process\./.test(text), name);
  }
});
