// A request carrying more than one Authorization header line is refused on every surface that reads a
// bearer credential (/v1, /admin, /metrics of a web process and of a worker), with that surface's 401
// for an unusable credential: Node keeps the first line and drops the rest, so a proxy reading the last
// one and this service would disagree about who is calling (docs/reference/decisions.md). /mcp is in
// test/mcp/mcp.test.ts; the OAuth endpoints authenticate no client by header (public clients only).
import test from 'ava';
import { ADMIN_TOKEN, startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { rawRequest } from '../helpers/raw-http.ts';
import { createLogger } from '../../src/log.ts';
import { serveWorkerMetrics } from '../../src/worker/metrics-listener.ts';

const METRICS_TOKEN = 'metrics-token-for-repeated-authorization';

let app: TestApp;
let acme: AppliedOrg;

test.before(async () => {
  app = await startApp({ env: { METRICS_TOKEN } });
  acme = await applyManifest(app);
});
test.after.always(() => app?.close());

const codeOf = (text: string) => JSON.parse(text).error.code as string;

/** One line of `first`, or two lines: `first` then `second` (what node:http sends for an array). */
const send = (base: string, path: string, first: string, second?: string) =>
  rawRequest(base, 'GET', path, { authorization: (second === undefined ? first : [first, second]) as string });

test('/v1: a second Authorization line is 401 unauthorized, whichever credentials the lines carry', async (t) => {
  const key = `Bearer ${acme.keys['admin-key']}`;
  t.is((await send(app.url, '/v1/agents', key)).status, 200);
  for (const second of [key, `Bearer ${acme.keys['buyer-key']}`, 'Bearer cmp_live_000000000000_' + 'A'.repeat(43), '']) {
    const res = await send(app.url, '/v1/agents', key, second);
    t.is(res.status, 401, JSON.stringify(second));
    t.is(codeOf(res.text), 'unauthorized');
    t.regex(JSON.parse(res.text).error.message, /more than one/);
  }
});

test('/admin: a second Authorization line is 401 unauthorized, even when both carry ADMIN_TOKEN', async (t) => {
  const token = `Bearer ${ADMIN_TOKEN}`;
  t.is((await send(app.url, '/admin/oauth-clients', token)).status, 200);
  for (const second of [token, 'Bearer not-the-admin-token']) {
    const res = await send(app.url, '/admin/oauth-clients', token, second);
    t.is(res.status, 401);
    t.is(codeOf(res.text), 'unauthorized');
  }
});

test('/metrics of a web process: a second Authorization line is 401 with the metrics challenge', async (t) => {
  const token = `Bearer ${METRICS_TOKEN}`;
  t.is((await send(app.url, '/metrics', token)).status, 200);
  const res = await send(app.url, '/metrics', token, token);
  t.is(res.status, 401);
  t.is(codeOf(res.text), 'unauthorized');
  t.is(res.headers['www-authenticate'], 'Bearer realm="metrics"');
});

test('/metrics of a worker (METRICS_PORT): a second Authorization line is 401 with the metrics challenge', async (t) => {
  // The listener is told port 0 and logs the one it got.
  let port = 0;
  const log = createLogger('info', (line) => {
    const fields = JSON.parse(line) as { msg: string; port?: number };
    if (fields.msg === 'metrics listening') port = fields.port ?? 0;
  });
  const stop = await serveWorkerMetrics({ metricsPort: 0, metricsToken: METRICS_TOKEN }, log);
  t.teardown(stop);
  const base = `http://127.0.0.1:${port}`;
  const token = `Bearer ${METRICS_TOKEN}`;
  t.is((await send(base, '/metrics', token)).status, 200);
  const res = await send(base, '/metrics', token, 'Bearer not-the-metrics-token');
  t.is(res.status, 401);
  t.is(codeOf(res.text), 'unauthorized');
  t.is(res.headers['www-authenticate'], 'Bearer realm="metrics"');
});
