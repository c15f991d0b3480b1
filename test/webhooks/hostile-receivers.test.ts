// Webhook delivery against hostile receivers and a rebinding DNS, through the real delivery path: the
// whole service (API and Agenda worker, real sendWebhook) in a child process trusting a throwaway CA
// (fixtures/service.ts), endpoints created over the API, attempts made by the worker's jobs, outcomes
// read back from GET /v1/webhooks/{id}/deliveries (docs/reference/contract.md §6.5, §6.6). The child's DNS
// is scripted over IPC, and its request timeout is the configurable one (4 s instead of 10 s), so a
// test that waits for a timeout waits for the service's own timer, never for a sleep of its own.
//
// Loopback is allowed in this mode (WEBHOOK_UNSAFE_ALLOW_LOCAL=1); that 127.0.0.1 and ::1 themselves are
// refused at delivery time without it is in pipeline.test.ts.
import test from 'ava';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import { createServer as createTlsServer, type TLSSocket } from 'node:tls';
import type { AddressInfo } from 'node:net';
import { createTestPki, startReceiver, PINNED_TEST_HOSTNAME, type Receiver, type TestPki } from '../helpers/https-receiver.ts';
import { acmeManifest, applyManifest } from '../helpers/fixtures.ts';
import type { ResolvedAddress } from '../../src/webhooks/destination.ts';
import { startChildService, waitFor, type ChildService } from './fixtures/child-service.ts';

const TIMEOUT_MS = 4000;

let pki: TestPki;
let api: ChildService;
const closers: Array<() => Promise<void>> = [];
/** Every signing secret handed out in this file: none may appear in a record or a log line. */
const secrets: string[] = [];

const ask = (cmd: string, extra: Record<string, unknown> = {}): Promise<any> => api.ask(cmd, extra);

test.before(async () => {
  pki = await createTestPki();
  api = await startChildService(pki, { TEST_WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS) });
});

test.after.always(async () => {
  api?.stop();
  await Promise.all(closers.map((close) => close()));
  await pki?.cleanup();
});


async function receiver(cert: 'trusted' | 'untrusted', responses: Parameters<typeof startReceiver>[0]['responses']): Promise<Receiver> {
  const r = await startReceiver({ ...pki[cert], responses });
  closers.push(() => r.close());
  return r;
}

let orgs = 0;
/** A new organisation with one endpoint at `url`, and a queued `webhook.test` delivery to it. */
async function endpointWithTestDelivery(url: string) {
  const applied = await applyManifest(api, acmeManifest(`hostile${++orgs}`));
  const admin = applied.keys['admin-key'];
  const created = await api.request('/v1/webhooks', { key: admin, body: { url, subscribedTypes: ['purchase.approved'] } });
  if (created.status !== 201) throw new Error(`endpoint refused: ${created.text}`);
  secrets.push(created.body.secret);
  const queued = await api.request(`/v1/webhooks/${created.body.id}/test`, { key: admin, method: 'POST' });
  if (queued.status !== 202) throw new Error(`test delivery refused: ${queued.text}`);
  return { admin, id: created.body.id as string };
}

/** The endpoint's (single) delivery once its first attempt is recorded. */
async function firstAttempt(ep: { admin: string; id: string }): Promise<any> {
  return waitFor('the first attempt to be recorded', async () => {
    const res = await api.request(`/v1/webhooks/${ep.id}/deliveries`, { key: ep.admin });
    const [d] = res.body.items;
    return d?.attemptCount === 1 && d;
  });
}

const v4 = (address: string): ResolvedAddress => ({ address, family: 4 });
const v6 = (address: string): ResolvedAddress => ({ address, family: 6 });

// ---- 1. DNS rebinding at delivery time ----

test.serial('the connection goes to the address checked before the attempt: later answers (10.0.0.1) are never asked for', async (t) => {
  const r = await receiver('trusted', [{ status: 204 }]);
  // Creation sees 127.0.0.1, the attempt's own check sees 127.0.0.1, and any further lookup (one the
  // connection would make if it resolved the name again) would get an address that is refused.
  await ask('dns', { answers: { [PINNED_TEST_HOSTNAME]: [[v4('127.0.0.1')], [v4('127.0.0.1')], [v4('10.0.0.1')]] } });
  const ep = await endpointWithTestDelivery(`https://${PINNED_TEST_HOSTNAME}:${r.port}/pinned`);
  const d = await firstAttempt(ep);
  t.like(d, { status: 'DELIVERED', lastStatusCode: 204, lastErrorClass: null });
  t.is(r.requests.length, 1);
  t.is(r.requests[0].headers.host, `${PINNED_TEST_HOSTNAME}:${r.port}`);
  t.is((await ask('lookups')).calls[PINNED_TEST_HOSTNAME], 2, 'one lookup at creation, one before the attempt, none by the connection');
});

for (const [label, answer] of [
  ['10.0.0.1', [v4('10.0.0.1')]],
  ['169.254.169.254 (cloud metadata)', [v4('169.254.169.254')]],
  ['100.64.0.1 (carrier-grade NAT, 100.64.0.0/10)', [v4('100.64.0.1')]],
  ['::ffff:127.0.0.1 (IPv4-mapped loopback)', [v6('::ffff:127.0.0.1')]],
  ['fc00::1 (unique local, fc00::/7)', [v6('fc00::1')]],
  ['fd00:ec2::254 (cloud metadata over IPv6)', [v6('fd00:ec2::254')]],
  ['127.0.0.1 and 10.0.0.1 (one of the answers)', [v4('127.0.0.1'), v4('10.0.0.1')]],
] as Array<[string, ResolvedAddress[]]>) {
  test.serial(`a name public at creation that resolves to ${label} at delivery: nothing sent, RETRY DESTINATION_NOT_PERMITTED`, async (t) => {
    const r = await receiver('trusted', [{ status: 200 }]);
    await ask('dns', { answers: { [PINNED_TEST_HOSTNAME]: [[v4('127.0.0.1')], answer] } });
    const ep = await endpointWithTestDelivery(`https://${PINNED_TEST_HOSTNAME}:${r.port}/rebound`);
    const d = await firstAttempt(ep);
    t.like(d, { status: 'PENDING', lastStatusCode: null, lastErrorClass: 'DESTINATION_NOT_PERMITTED', lastResponseSnippet: null, deliveredAt: null });
    t.truthy(d.nextAttemptAt);
    t.is(r.requests.length, 0);
  });
}

// ---- 2. Redirects ----

for (const status of [301, 302, 303, 307, 308]) {
  test.serial(`${status} to an internal address is not followed: FAILED, REDIRECT, the target never asked`, async (t) => {
    const internal = await receiver('trusted', [{ status: 200 }]);
    for (const location of [`https://localhost:${internal.port}/admin`, 'https://169.254.169.254/latest/meta-data/iam/security-credentials/']) {
      const r = await receiver('trusted', [{ status, headers: { location }, body: 'moved' }]);
      const ep = await endpointWithTestDelivery(`${r.origin}/hook`);
      const d = await firstAttempt(ep);
      t.like(d, { status: 'FAILED', attemptCount: 1, lastStatusCode: status, lastErrorClass: 'REDIRECT', lastResponseSnippet: 'moved', nextAttemptAt: null, deliveredAt: null });
      t.deepEqual(r.requests.map((q) => q.path), ['/hook']);
    }
    t.is(internal.requests.length, 0);
  });
}

// ---- 3. Hostile receivers ----

/** An HTTPS receiver that answers `status` and then streams 'x' forever, as fast as it is read. */
async function endlessBody(status: number) {
  const state = { bytesWritten: 0, closed: false, requests: 0 };
  const server = createHttpsServer(pki.trusted, (req, res) => {
    state.requests++;
    req.resume();
    res.writeHead(status, { 'content-type': 'text/plain' });
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const pump = () => {
      while (!res.destroyed && res.write(chunk)) state.bytesWritten += chunk.length;
    };
    res.on('drain', pump);
    res.once('close', () => (state.closed = true));
    pump();
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  closers.push(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }));
  return { port: (server.address() as AddressInfo).port, state };
}

test.serial('a 500 whose body never ends: recorded with a 512-byte snippet, the rest never read', async (t) => {
  const r = await endlessBody(500);
  const ep = await endpointWithTestDelivery(`https://localhost:${r.port}/endless`);
  const d = await firstAttempt(ep);
  // A reader that kept going would have been cut off by the timeout with nothing to show.
  t.like(d, { status: 'PENDING', lastStatusCode: 500, lastErrorClass: 'HTTP_STATUS', lastResponseSnippet: 'x'.repeat(512) });
  await waitFor('the sender to close the connection', () => r.state.closed);
  t.is(r.state.requests, 1);
});

test.serial('a 200 whose body never ends: DELIVERED, the body is not read', async (t) => {
  const r = await endlessBody(200);
  const ep = await endpointWithTestDelivery(`https://localhost:${r.port}/endless`);
  const d = await firstAttempt(ep);
  t.like(d, { status: 'DELIVERED', lastStatusCode: 200, lastErrorClass: null, lastResponseSnippet: null });
  await waitFor('the sender to close the connection', () => r.state.closed);
});

test.serial('a 500 whose body trickles in a byte at a time: the timeout covers the body too, and the status and what came of the body are kept', async (t) => {
  // Each byte comes well within any per-read timeout; only a deadline on the whole exchange ends this.
  let closed = false;
  const server = createHttpsServer(pki.trusted, (req, res) => {
    req.resume();
    res.writeHead(500, { 'content-type': 'text/plain' });
    res.flushHeaders();
    const timer = setInterval(() => res.write('y'), 200); // 512 bytes would take 100 s
    res.once('close', () => {
      clearInterval(timer);
      closed = true;
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  closers.push(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }));
  const ep = await endpointWithTestDelivery(`https://localhost:${(server.address() as AddressInfo).port}/drip`);
  const d = await firstAttempt(ep);
  t.like(d, { status: 'PENDING', lastStatusCode: 500, lastErrorClass: 'HTTP_STATUS', deliveredAt: null });
  // A byte every 200 ms within the attempt's deadline: the part that arrived is the snippet.
  t.regex(String(d.lastResponseSnippet), /^y+$/);
  await waitFor('the sender to close the connection', () => closed);
});

test.serial('a 200 behind a megabyte of headers: not DELIVERED, retried, and nothing of it kept', async (t) => {
  let requests = 0;
  const server = createHttpsServer(pki.trusted, (req, res) => {
    requests++;
    req.resume();
    res.writeHead(200, { 'x-padding': 'p'.repeat(1024 * 1024) });
    res.end('ok');
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  closers.push(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }));
  const ep = await endpointWithTestDelivery(`https://localhost:${(server.address() as AddressInfo).port}/fat`);
  const d = await firstAttempt(ep);
  t.is(requests, 1);
  t.like(d, { status: 'PENDING', lastStatusCode: null, lastResponseSnippet: null, deliveredAt: null });
  // undici stops reading at its header limit (UND_ERR_HEADERS_OVERFLOW): a network failure, retried (6.5).
  t.is(d.lastErrorClass, 'NETWORK');
  t.truthy(d.nextAttemptAt);
});

/**
 * A TLS receiver that, once the request has arrived, sends `200 OK` and then its headers one byte
 * every 50 ms: they would be complete (an empty 200) after about a minute, far beyond the timeout.
 */
async function tricklingHeaders() {
  const state = { requestBytes: 0, closed: false };
  const server = createTlsServer(pki.trusted, (socket: TLSSocket) => {
    let started = false;
    socket.on('data', (chunk: Buffer) => {
      state.requestBytes += chunk.length;
      if (started) return;
      started = true;
      socket.write('HTTP/1.1 200 OK\r\n');
      const header = `X-Slow: ${'a'.repeat(1200)}\r\nContent-Length: 0\r\n\r\n`;
      let i = 0;
      const timer = setInterval(() => {
        if (socket.destroyed || i >= header.length) return clearInterval(timer);
        socket.write(header[i++]);
      }, 50);
      socket.once('close', () => clearInterval(timer));
    });
    socket.once('close', () => (state.closed = true));
    socket.on('error', () => undefined);
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port: (server.address() as AddressInfo).port, state };
}

test.serial('headers trickling in (a 200 that would complete long after the timeout): TIMEOUT, never DELIVERED', async (t) => {
  const r = await tricklingHeaders();
  const ep = await endpointWithTestDelivery(`https://localhost:${r.port}/trickle`);
  const d = await firstAttempt(ep);
  t.true(r.state.requestBytes > 0, 'the request reached the receiver');
  t.like(d, { status: 'PENDING', lastStatusCode: null, lastErrorClass: 'TIMEOUT', deliveredAt: null });
  await waitFor('the sender to close the connection', () => r.state.closed);
  const after = (await api.request(`/v1/webhooks/${ep.id}/deliveries`, { key: ep.admin })).body.items[0];
  t.like(after, { status: 'PENDING', attemptCount: 1, lastErrorClass: 'TIMEOUT' });
});

test.serial('a receiver that accepts the TCP connection and never says a word: TIMEOUT', async (t) => {
  const sockets: Socket[] = [];
  let closed = 0;
  const server: TcpServer = createTcpServer((socket) => {
    sockets.push(socket);
    socket.resume(); // read (and drop) the TLS hello, so that the sender's close is seen
    socket.on('error', () => undefined);
    socket.once('close', () => closed++);
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  closers.push(() => new Promise<void>((resolve) => { for (const s of sockets) s.destroy(); server.close(() => resolve()); }));
  const ep = await endpointWithTestDelivery(`https://localhost:${(server.address() as AddressInfo).port}/silent`);
  const d = await firstAttempt(ep);
  t.like(d, { status: 'PENDING', lastStatusCode: null, lastErrorClass: 'TIMEOUT', deliveredAt: null });
  t.true(sockets.length >= 1, 'the sender did connect');
  await waitFor('the sender to close the connection', () => closed === sockets.length && closed);
});

test.serial('a certificate from an unknown authority: RETRY TLS, nothing sent', async (t) => {
  const r = await receiver('untrusted', [{ status: 200 }]);
  const ep = await endpointWithTestDelivery(`${r.origin}/hook`);
  const d = await firstAttempt(ep);
  t.like(d, { status: 'PENDING', lastStatusCode: null, lastErrorClass: 'TLS', deliveredAt: null });
  t.is(r.requests.length, 0);
});

test.serial('a certificate for another name than the endpoint’s: RETRY TLS, nothing sent', async (t) => {
  const r = await receiver('trusted', [{ status: 200 }]);
  const name = 'not-in-certificate.webhook-receiver-test.com';
  await ask('dns', { answers: { [name]: [[v4('127.0.0.1')]] } });
  const ep = await endpointWithTestDelivery(`https://${name}:${r.port}/hook`);
  const d = await firstAttempt(ep);
  t.like(d, { status: 'PENDING', lastStatusCode: null, lastErrorClass: 'TLS', deliveredAt: null });
  t.is(r.requests.length, 0);
});

// ---- 4. Secrets ----

test.serial('no signing secret appears in any stored document, log line or metric, after all the failures above', async (t) => {
  t.true(secrets.length >= 10, 'secrets were handed out above');
  const { json } = await ask('dump');
  const { lines } = (await ask('logs')) as { lines: string[] };
  const { text: metrics } = await ask('metrics');
  t.regex(metrics, /spend_webhook_delivery_attempts_total\{[^}]*result="retry"/, 'the attempts were counted');
  // Not vacuous: the failures above were logged with their details, and the store holds the deliveries.
  t.true(lines.some((l) => l.includes('webhook attempt failed') && l.includes('"errorClass":"TLS"')), 'failures were logged');
  t.true(json.includes('"lastErrorClass":"TIMEOUT"'), 'the deliveries are in the dump');
  for (const secret of secrets) {
    const body = secret.slice('cmp_whs_'.length);
    t.false(json.includes(body), 'a secret in the store');
    t.false(lines.some((l) => l.includes(body)), 'a secret in a log line');
    t.false(metrics.includes(body), 'a secret in a metric');
  }
});
