// A process that only runs jobs loads no HTTP code (src/capability.ts): a capability's routes are its
// surface.ts, listed in src/service-app.ts, never imported from a capability.ts. One stray import
// would bring Koa, the routes and the MCP SDK into the worker process: about 20 MB of its resident
// memory (docs/internals/performance.md, "Memory: the soak").
import test from 'ava';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

test('the worker loads no Koa, no route, no surface and no MCP SDK', async (t) => {
  const { stdout } = await run(process.execPath, ['test/worker/fixtures/jobs-graph-probe.ts'], { maxBuffer: 16 * 1024 * 1024 });
  const loaded = stdout.split('\n').filter(Boolean);
  t.true(loaded.some((url) => url.endsWith('/src/compose.ts')), 'the probe saw the composition root load');
  t.true(loaded.some((url) => url.endsWith('/src/purchases/handler.ts')), 'the probe saw the jobs\' own modules load');
  const http = loaded.filter((url) =>
    /\/node_modules\/(koa|@koa\/router|koa-body|@modelcontextprotocol\/sdk|zod)\/|\/src\/[^/]+\/(routes|surface)\.ts$|\/src\/service-app\.ts$|\/src\/mcp\/serve\.ts$/.test(url),
  );
  t.deepEqual(http, []);
});
