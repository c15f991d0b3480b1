// A port for a child process that must be told its port before it starts (the service's PORT in the
// bench and the soak; EMBEDDED_MONGO_PORT and a cluster's PORT in tests). Not from the kernel's range
// for outgoing connections (ip_local_port_range): a port from there, found free and then released,
// could become the local end of another outgoing connection before the child binds it (EADDRINUSE,
// seen in CI). Below that range nothing is handed out unasked; the port is still checked free.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

function ephemeralLow(): number {
  const range = /^(\d+)/.exec(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim());
  return range ? Number(range[1]) : 32768;
}

const bindable = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

export async function portForChild(): Promise<number> {
  const high = ephemeralLow() - 1;
  const low = Math.max(1024, high - 10_000);
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low + 1));
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port between ${low} and ${high}`);
}
