// A client that stalls (a Content-Length larger than the body it sends, or headers that never end)
// gets 408 with the JSON error body and loses its connection, within the server's timeouts.
import test from 'ava';
import { connect } from 'node:net';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { shopManifest } from '../helpers/shop.ts';
import Koa from 'koa';
import { SERVER_TIMEOUTS, createHttpServer } from '../../src/http/server.ts';

let app: TestApp;
let shop: AppliedOrg;

test.before(async () => {
  app = await startApp({ timeouts: { headersTimeoutMs: 600, requestTimeoutMs: 1200, keepAliveTimeoutMs: 500, checkIntervalMs: 100 } });
  shop = await applyManifest(app, shopManifest());
});
test.after.always(() => app?.close());

/** Writes raw bytes and collects everything the server sends until it closes the connection. */
function stall(head: string, giveUpMs = 20_000): Promise<{ text: string; closed: boolean }> {
  const { port } = new URL(app.url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(head));
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text, closed: false });
    }, giveUpMs);
    socket.on('data', (chunk) => (text += chunk.toString('utf8')));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text, closed: true });
    });
    socket.on('error', () => {});
  });
}

const bodyOf = (text: string) => JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));

test('a body shorter than its Content-Length is answered 408 request_timeout and the connection closed', async (t) => {
  const head =
    'POST /v1/purchase-requests HTTP/1.1\r\nHost: localhost\r\n' +
    `Authorization: Bearer ${shop.keys['a-key']}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"merchant":`;
  const { text, closed } = await stall(head);
  t.true(closed, 'the server closed the connection');
  t.regex(text, /^HTTP\/1\.1 408 /);
  t.regex(text, /content-type: application\/json/i);
  t.deepEqual(bodyOf(text).error.code, 'request_timeout');
  t.is(await app.store.db.collection('purchases').countDocuments({}), 0);
});

test('headers that never end are answered 408 request_timeout', async (t) => {
  const { text, closed } = await stall('GET /v1/agents HTTP/1.1\r\nHost: localhost\r\nX-Slow: 1\r\n');
  t.true(closed);
  t.regex(text, /^HTTP\/1\.1 408 /);
  t.is(bodyOf(text).error.code, 'request_timeout');
});

test('unparseable HTTP is 400 invalid_request with the JSON body', async (t) => {
  const { text, closed } = await stall('GET /v1/agents HTTP/1.1\r\nHost: localhost\r\nBad Header\r\n\r\n');
  t.true(closed);
  t.regex(text, /^HTTP\/1\.1 400 /);
  t.is(bodyOf(text).error.code, 'invalid_request');
});

test('an HTTP/1.1 request without a Host header, or with two, is 400 invalid_request with the JSON body (RFC 9112 3.2)', async (t) => {
  for (const head of ['GET /v1/agents HTTP/1.1\r\n\r\n', 'GET /v1/agents HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n']) {
    const { text, closed } = await stall(head);
    t.true(closed, head);
    t.regex(text, /^HTTP\/1\.1 400 /, head);
    t.regex(text, /content-type: application\/json/i, head);
    t.deepEqual(bodyOf(text).error.issues.map((i: { path: string; code: string }) => [i.path, i.code]), [['', 'MALFORMED_HTTP']], head);
  }
  // HTTP/1.0 has no Host requirement.
  const old = await stall('GET /health HTTP/1.0\r\n\r\n');
  t.regex(old.text, /^HTTP\/1\.1 200 /);
});

test('the server main.ts starts has the documented timeouts: headers 10 s, whole request 30 s, keep-alive 5 s', (t) => {
  const server = createHttpServer(new Koa());
  t.is(server.headersTimeout, 10_000);
  t.is(server.requestTimeout, 30_000);
  t.is(server.keepAliveTimeout, 5_000);
  t.deepEqual(SERVER_TIMEOUTS, { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 5_000, checkIntervalMs: 1_000 });
});
