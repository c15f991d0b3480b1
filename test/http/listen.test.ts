// The service's port, listened on with several sockets (src/http/listen.ts).
import test from 'ava';
import Koa from 'koa';
import { connect, createServer, Server as NetServer, type Socket } from 'node:net';
import { listen, reservePort } from '../../src/http/listen.ts';
import { createHttpServer } from '../../src/http/server.ts';
import { drainServer } from '../../src/http/shutdown.ts';

const okApp = () => new Koa().use((ctx) => void (ctx.body = { ok: true }));

const blockFor = (ms: number) => {
  const until = Date.now() + ms;
  while (Date.now() < until);
};

test('a busy process accepts a burst of new connections in one turn of the event loop, not one', async (t) => {
  const server = createHttpServer(okApp());
  const port = await listen(server, 0, '127.0.0.1');
  let accepted = 0;
  const sockets: Socket[] = [];
  server.on('connection', (socket: Socket) => {
    accepted++;
    sockets.push(socket);
  });
  const clients: Socket[] = [];
  // The most connections accepted between two check phases: in one turn of the event loop.
  const mostInOneTurn = await new Promise<number>((resolve) => {
    for (let i = 0; i < 48; i++) clients.push(connect(port, '127.0.0.1').on('error', () => {}));
    // Node starts the connects on the next tick; the kernel completes them while this thread is held,
    // as it is while a busy service runs a commit group.
    process.nextTick(() => {
      blockFor(200);
      let most = 0;
      let before = accepted;
      const sample = () => {
        most = Math.max(most, accepted - before);
        before = accepted;
        if (accepted < 48) setImmediate(sample);
        else resolve(most);
      };
      setImmediate(sample);
    });
  });
  // One listening socket accepts exactly one per turn; the kernel spreads 48 connections over 16.
  t.true(mostInOneTurn >= 4, `at most ${mostInOneTurn} accepted in one turn`);
  // And every connection is served by the one HTTP server.
  const responses = await Promise.all(
    clients.map(
      (socket) =>
        new Promise<string>((resolve) => {
          let text = '';
          socket.on('data', (chunk) => (text += chunk)).on('end', () => resolve(text));
          socket.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
        }),
    ),
  );
  t.true(responses.every((r) => r.startsWith('HTTP/1.1 200') && r.endsWith('{"ok":true}')));
  t.is(accepted, 48);
  // Whichever socket accepted it, a connection has the options http.Server gives its own: no Nagle
  // delay (a response written in two parts waited ~40 ms for a delayed ACK without it), half-open allowed.
  const noDelay = (socket: Socket) => {
    const key = Object.getOwnPropertySymbols(socket).find((symbol) => symbol.description === 'kSetNoDelay');
    return key === undefined ? 'unknown' : (socket as unknown as Record<symbol, boolean>)[key];
  };
  t.deepEqual([...new Set(sockets.map(noDelay))], [true]);
  t.true(sockets.every((socket) => socket.allowHalfOpen));
  await drainServer(server);
});

test('a port another process holds is EADDRINUSE, whether it listens alone or like this service', async (t) => {
  const plain = createServer();
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
  const taken = (plain.address() as { port: number }).port;
  await t.throwsAsync(listen(createHttpServer(okApp()), taken, '127.0.0.1'), { code: 'EADDRINUSE' });
  plain.close();

  const first = createHttpServer(okApp());
  const port = await listen(first, 0, '127.0.0.1');
  await t.throwsAsync(listen(createHttpServer(okApp()), port, '127.0.0.1'), { code: 'EADDRINUSE' });
  await drainServer(first);
});

test('two services started at the same instant on one port: one listens, the other is EADDRINUSE', async (t) => {
  const free = createServer();
  await new Promise<void>((resolve) => free.listen(0, '127.0.0.1', resolve));
  const port = (free.address() as { port: number }).port;
  await new Promise((resolve) => free.close(resolve));
  // The second service starts in the worst instant: after the first found the port free (its probe,
  // bound without SO_REUSEPORT, closes) and before the first binds it with SO_REUSEPORT.
  const first = createHttpServer(okApp());
  const second = createHttpServer(okApp());
  let secondOutcome: Promise<PromiseSettledResult<number>> | undefined;
  const close = NetServer.prototype.close;
  t.teardown(() => void (NetServer.prototype.close = close));
  NetServer.prototype.close = function (this: NetServer, done?: (error?: Error) => void) {
    const address = this.address();
    const isProbe = secondOutcome === undefined && this !== first && typeof address === 'object' && address?.port === port;
    if (!isProbe) return close.call(this, done);
    secondOutcome = Promise.allSettled([listen(second, port, '127.0.0.1')]).then(([outcome]) => outcome);
    return close.call(this, (error) => void secondOutcome!.then(() => done?.(error)));
  };
  const firstOutcome = (await Promise.allSettled([listen(first, port, '127.0.0.1')]))[0];
  NetServer.prototype.close = close;
  t.truthy(secondOutcome, 'the second service started between the first one\'s probe and its bind');
  t.deepEqual([firstOutcome.status, (await secondOutcome!).status], ['fulfilled', 'rejected']);
  t.is(((await secondOutcome!) as PromiseRejectedResult).reason.code, 'EADDRINUSE');
  await drainServer(first);
  // Once the first has stopped, the port is free again for a service that starts then.
  const third = createHttpServer(okApp());
  t.is(await listen(third, port, '127.0.0.1'), port);
  await drainServer(third);
});

test('a drain waits for the requests in flight on every socket, then stops', async (t) => {
  // Requests on the other sockets' connections are held; those on the HTTP server's own socket are not,
  // so the server alone would count nothing in flight. (Node counts a connection on socket._server, the
  // listening socket that accepted it; http.Server sets socket.server to itself.)
  let started = 0;
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const app = new Koa().use(async (ctx) => {
    started++;
    if ((ctx.req.socket as Socket & { _server?: unknown })._server !== server) await held;
    ctx.body = { ok: true };
  });
  const server = createHttpServer(app);
  const port = await listen(server, 0, '127.0.0.1');
  const answered: string[] = [];
  const requests = Array.from({ length: 32 }, () =>
    fetch(`http://127.0.0.1:${port}/`).then(
      (response) => void answered.push(String(response.status)),
      (error: Error) => void answered.push(error.message),
    ),
  );
  while (started < 32) await new Promise((resolve) => setTimeout(resolve, 10));
  let drained = false;
  const drain = drainServer(server).then(() => (drained = true));
  await new Promise((resolve) => setTimeout(resolve, 100));
  t.false(drained, 'the drain waits while requests are in flight');
  release();
  await drain;
  await Promise.all(requests);
  t.deepEqual(answered, Array(32).fill('200'));
});

test('draining the server stops every socket from accepting', async (t) => {
  const server = createHttpServer(okApp());
  const port = await listen(server, 0, '127.0.0.1');
  await drainServer(server);
  // Each attempt lands on a socket chosen by its source port: were any still open, some would connect.
  const outcomes = await Promise.all(
    Array.from(
      { length: 32 },
      () =>
        new Promise<string>((resolve) => {
          const socket = connect(port, '127.0.0.1');
          socket.once('connect', () => {
            socket.destroy();
            resolve('connected');
          });
          socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
        }),
    ),
  );
  t.deepEqual([...new Set(outcomes)], ['ECONNREFUSED']);
});

test('the port PORT=0 picks is held from its choice until the service listens: another service cannot take it meanwhile', async (t) => {
  const reserved = await reservePort();
  const other = createHttpServer(okApp());
  await t.throwsAsync(listen(other, reserved.port), { code: 'EADDRINUSE' }, 'held while this service starts');
  await reserved.release();
  const server = createHttpServer(okApp());
  t.is(await listen(server, reserved.port), reserved.port, 'and free for it once released');
  await drainServer(server);
});
