// Every error code a client can meet has a test that makes the service answer it and asserts both
// the code and its status. The codes are read from the contract (docs/reference/contract.md: its
// "403 `code`" sentences and §7's pointer to the document's components/responses) and from the
// additions docs/integrate/rest-api.md lists; the tests are read from test/**/*.test.ts. A code counts
// as covered only by one test (one `test(...)` block) that asserts the code on an answer and asserts
// the documented status: a code named in a list of known codes, or asserted without its status, does
// not count.
import test from 'ava';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openApi } from '../helpers/contract.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** `code` -> the statuses it is documented with. */
function documentedCodes(): Map<string, Set<number>> {
  const codes = new Map<string, Set<number>>();
  const add = (code: string, status: number) => codes.set(code, (codes.get(code) ?? new Set()).add(status));
  for (const [name, response] of Object.entries(openApi.components.responses as Record<string, any>)) {
    const status = Number(name.slice(0, 3));
    for (const code of response.content?.['application/json']?.schema?.properties?.error?.properties?.code?.enum ?? []) add(code, status);
  }
  // "403 `api_key_not_bound_to_agent` or `api_key_not_organization_scoped`": every code of such a phrase.
  for (const m of read('docs/reference/contract.md').matchAll(/\b([45]\d\d)\s+(`[a-z_]+`(?:(?:,|\s+or)\s+`[a-z_]+`)*)/g)) {
    for (const code of m[2].matchAll(/`([a-z_]+)`/g)) add(code[1], Number(m[1]));
  }
  for (const m of read('docs/integrate/rest-api.md').matchAll(/^\| error code \| (\d{3}) `([a-z_]+)` \|/gm)) add(m[2], Number(m[1]));
  return codes;
}

function testFiles(dir = 'test'): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    return statSync(join(ROOT, path)).isDirectory() ? testFiles(path) : name.endsWith('.test.ts') ? [path] : [];
  });
}

/** A file's `test(...)` blocks: from one registration to the next. */
export function testBlocks(source: string): string[] {
  return source.split(/^(?=\s*test(?:\.serial)?\s*\()/m).filter((block) => /^\s*test(?:\.serial)?\s*\(/.test(block));
}

const quoted = (code: string) => `['"\`]${code}['"\`]`;

/** Whether a test block asserts `code` on an answer together with `status`. */
export function assertsCodeAndStatus(block: string, code: string, status: number): boolean {
  // expectError(t, res, 409, 'code'): both at once.
  if (new RegExp(`expectError\\(t,[^\\n]*\\b${status}, ${quoted(code)}`).test(block)) return true;
  // t.is(res.body.error.code, 'code') / t.is(code(res), 'code') / t.like(x, { code: 'code' }) ...
  const onCode = new RegExp(`t\\.(?:is|deepEqual)\\([^\\n]*\\bcode\\b[^\\n]*, ${quoted(code)}|t\\.like\\([^\\n]*\\bcode: ${quoted(code)}`);
  // ... and, in the same test, t.is(res.status, 409), or the raw status line: t.regex(text, /^HTTP\/1\.1 408 /).
  const onStatus = new RegExp(`t\\.is\\([^\\n]*\\bstatus\\b[^\\n,]*, ${status}\\b|t\\.regex\\([^\\n]*HTTP[^\\n]* ${status} `);
  return onCode.test(block) && onStatus.test(block);
}

test('the checker counts a test that asserts code and status, and nothing less', (t) => {
  const full = `test('x', async (t) => {\n  const res = await app.request('/v1/x');\n  t.is(res.status, 409);\n  t.is(res.body.error.code, 'webhook_limit_reached');\n});\n`;
  t.true(testBlocks(full).some((b) => assertsCodeAndStatus(b, 'webhook_limit_reached', 409)));
  t.true(assertsCodeAndStatus(`test('x', (t) => {\n  expectError(t, await create(o.admin), 409, 'webhook_limit_reached');\n});`, 'webhook_limit_reached', 409));
  // Without the status assertion, with another status, or in another test: not covered.
  t.false(assertsCodeAndStatus(full.replace('t.is(res.status, 409);', ''), 'webhook_limit_reached', 409));
  t.false(assertsCodeAndStatus(full, 'webhook_limit_reached', 400));
  const split = `test('a', (t) => {\n  t.is(res.status, 409);\n});\ntest('b', (t) => {\n  t.is(res.body.error.code, 'webhook_limit_reached');\n});\n`;
  t.false(testBlocks(split).some((b) => assertsCodeAndStatus(b, 'webhook_limit_reached', 409)));
  // A list of known codes is not an assertion.
  t.false(assertsCodeAndStatus(`test('x', (t) => {\n  t.is(res.status, 409);\n  const KNOWN = ['webhook_limit_reached'];\n});`, 'webhook_limit_reached', 409));
});

test('the contract\'s codes are all read: the document\'s, the contract page\'s and the listed additions', (t) => {
  const codes = documentedCodes();
  // A few of each source, so that a change of format in one of them cannot empty the list unnoticed.
  t.deepEqual([...codes.get('webhook_not_configured')!].sort(), [503]);
  t.deepEqual([...codes.get('api_key_not_permitted')!], [403]);
  t.deepEqual([...codes.get('internal_error')!].sort(), [500, 503]);
  t.deepEqual([...codes.get('origin_not_allowed')!], [403]);
  t.deepEqual([...codes.get('method_not_allowed')!], [405]);
  t.true(codes.size >= 30, `${codes.size} codes`);
});

test('every documented error code and status has a test that reaches it and asserts both', (t) => {
  // Not this file: its checks of the checker hold made-up tests.
  const self = relative(ROOT, fileURLToPath(import.meta.url));
  const blocks = testFiles().filter((path) => path !== self).flatMap((path) => testBlocks(read(path)).map((block) => ({ path, block })));
  t.true(blocks.length > 500, `${blocks.length} tests read`);
  const missing: string[] = [];
  for (const [code, statuses] of documentedCodes()) {
    for (const status of statuses) {
      if (!blocks.some(({ block }) => assertsCodeAndStatus(block, code, status))) missing.push(`${status} ${code}`);
    }
  }
  t.deepEqual(missing.sort(), []);
});
