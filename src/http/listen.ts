// Listening on the service's port with several sockets, so that a busy process still accepts new
// connections promptly.
//
// Since libuv 1.45 (Node 20.3 and later) a listening socket accepts one connection per turn of the event
// loop. A busy service's turn runs a whole commit group of decisions (20-40 ms), so a burst of new
// connections waited in the kernel's queue, one accepted per turn: at 128 connections, 88 of them waited
// up to 3 s for their first response (strace showed one accept4 every 40 ms). Sockets that share the
// port (SO_REUSEPORT) each accept one per turn; the kernel spreads new connections over them, and each
// one is handed to the same HTTP server, with its timeouts and connection tracking. Node counts a
// connection on the socket that accepted it, so closing the HTTP server waits only for its own: a
// drain waits for the others' too (stopAccepting).
import cluster from 'node:cluster';
import type { Server } from 'node:http';
import { createServer, type AddressInfo, type Server as NetServer, type ServerOpts as NetServerOptions } from 'node:net';
import { listening } from '../listening.ts';
import { acceptSocketsShareAPort } from '../runtime.ts';

/** Sockets listening on the port in one process. */
export const ACCEPT_SOCKETS = 16;

const extras = new WeakMap<Server, NetServer[]>();

/**
 * Held while this process listens on host:port: a Unix socket in Linux's abstract namespace (one per
 * network namespace, as the port; gone with the process, however it ends). Two services started at
 * the same instant could both find the port free and then share it through SO_REUSEPORT; only one of
 * them gets the lock, and the other fails with EADDRINUSE as if it had met the port taken.
 */
async function portLock(host: string | undefined, port: number): Promise<NetServer> {
  const lock = createServer((socket) => socket.destroy());
  try {
    await listening(lock, { path: `\0spend-control-listen:${host ?? ''}:${port}` });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    const address = host ?? '::';
    throw Object.assign(new Error(`listen EADDRINUSE: address already in use ${address}:${port}`), { code: 'EADDRINUSE', syscall: 'listen', address, port });
  }
  return lock.unref();
}

/**
 * Listens on `port` (0: one the system picks) and resolves with the port bound. A port another process
 * holds is EADDRINUSE, as with one socket: it is checked free without SO_REUSEPORT first, and held with
 * portLock, so a second service started on the same port fails instead of sharing its connections. One socket only in a
 * cluster's web process (its primary accepts, on an idle event loop, and hands connections over), under
 * Deno (whose event loop is not libuv), and off Linux (Node refuses reusePort on macOS and Windows).
 */
export async function listen(server: Server, port: number, host?: string): Promise<number> {
  if (cluster.isWorker || !acceptSocketsShareAPort) {
    await listening(server, { port, host });
    return (server.address() as AddressInfo).port;
  }
  const more: NetServer[] = [];
  if (port !== 0) {
    more.push(await portLock(host, port));
    try {
      await bindAndRelease(port, host);
      await listening(server, { port, host, reusePort: true });
    } catch (error) {
      more[0].close();
      throw error;
    }
  } else {
    await listening(server, { port, host, reusePort: true });
  }
  const bound = server.address() as AddressInfo;
  extras.set(server, more);
  // The options http.Server gives its own connections (no Nagle delay, half-open allowed, ...).
  const own = server as Server & Pick<NetServerOptions, 'allowHalfOpen' | 'noDelay' | 'keepAlive' | 'keepAliveInitialDelay' | 'highWaterMark'>;
  const options: NetServerOptions = {
    allowHalfOpen: own.allowHalfOpen,
    noDelay: own.noDelay,
    keepAlive: own.keepAlive,
    keepAliveInitialDelay: own.keepAliveInitialDelay,
    highWaterMark: own.highWaterMark,
  };
  try {
    if (port === 0) more.push(await portLock(host, bound.port));
    for (let i = 1; i < ACCEPT_SOCKETS; i++) {
      const extra = createServer(options, (socket) => server.emit('connection', socket));
      await listening(extra, { port: bound.port, host: bound.address, reusePort: true });
      more.push(extra);
    }
  } catch (error) {
    await stopAccepting(server);
    server.close();
    throw error;
  }
  return bound.port;
}

/** Binds host:port without SO_REUSEPORT (EADDRINUSE when anything holds it), then lets it go; the port bound. */
async function bindAndRelease(port: number, host?: string): Promise<number> {
  const probe = createServer();
  await listening(probe, { port, host });
  const bound = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
  return bound;
}

/**
 * `port` (0: one the system picks) held (listened on, every connection reset) until released, so that no other
 * process can be given it meanwhile: PORT=0 is chosen seconds before the service listens (src/main.ts), and
 * a port merely found free then was sometimes taken by another service starting beside it (seen in the
 * tests). A port already taken is EADDRINUSE here, before the service has touched its store.
 */
export async function reservePort(port = 0, host?: string): Promise<{ port: number; release(): Promise<void> }> {
  // A client that connects meanwhile (a platform's probe, a load balancer) is reset at once, as if nothing
  // listened yet: a connection left open would keep close() from ever finishing, and the start with it.
  const holder = createServer((socket) => socket.destroy());
  await listening(holder, { port, host });
  const bound = (holder.address() as AddressInfo).port;
  return { port: bound, release: () => new Promise<void>((resolve) => holder.close(() => resolve())) };
}

/**
 * Stops accepting on every socket but `server`'s own (which server.close() stops), and resolves once
 * the connections they accepted have ended.
 */
export async function stopAccepting(server: Server): Promise<void> {
  const more = extras.get(server) ?? [];
  extras.delete(server);
  await Promise.all(more.map((extra) => new Promise((resolve) => extra.close(resolve))));
}
