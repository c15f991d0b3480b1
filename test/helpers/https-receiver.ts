// A real local HTTPS webhook receiver for tests.
//
// `createTestPki()` makes a throwaway CA and a server certificate for `localhost`,
// PINNED_TEST_HOSTNAME, 127.0.0.1 and ::1 with the openssl CLI in a temp dir, plus a second, untrusted CA with its own server
// certificate (for the TLS failure case). Trust the CA in a child process with
// NODE_EXTRA_CA_CERTS=<caPath> (Node reads it once at process start).
//
// `startReceiver()` listens on 127.0.0.1, port 0, answers each request with the next programmed
// response (the last one repeats), and records method, path, headers and raw body bytes.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:https';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const OPENSSL = '/usr/bin/openssl';

// A name that exists only in a test's injected lookup (never in real DNS as far as the test is
// concerned): reaching the receiver under it proves the sender connected to the checked address.
export const PINNED_TEST_HOSTNAME = 'pinned.webhook-receiver-test.com';

export interface TestPki {
  dir: string;
  /** The CA a child process should trust through NODE_EXTRA_CA_CERTS. */
  caPath: string;
  /** Server key and certificate signed by that CA (SAN localhost, 127.0.0.1, ::1). */
  trusted: { key: Buffer; cert: Buffer };
  /** Same names, signed by a different CA that nobody trusts. */
  untrusted: { key: Buffer; cert: Buffer };
  cleanup(): Promise<void>;
}

async function openssl(args: string[], cwd: string): Promise<void> {
  await run(OPENSSL, args, { cwd });
}

async function makeCa(dir: string, name: string): Promise<void> {
  await openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${name}.key`], dir);
  await openssl(
    [
      'req', '-x509', '-new', '-key', `${name}.key`, '-sha256', '-days', '2', '-subj', `/CN=${name} test CA`,
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
      '-out', `${name}.crt`,
    ],
    dir,
  );
}

async function makeServerCert(dir: string, ca: string, name: string): Promise<{ key: Buffer; cert: Buffer }> {
  await openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${name}.key`], dir);
  await openssl(['req', '-new', '-key', `${name}.key`, '-subj', '/CN=localhost', '-out', `${name}.csr`], dir);
  await writeFile(
    join(dir, `${name}.ext`),
    [
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature',
      'extendedKeyUsage=serverAuth',
      `subjectAltName=DNS:localhost,DNS:${PINNED_TEST_HOSTNAME},IP:127.0.0.1,IP:::1`,
      '',
    ].join('\n'),
  );
  await openssl(
    [
      'x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-CAcreateserial',
      '-days', '2', '-sha256', '-extfile', `${name}.ext`, '-out', `${name}.crt`,
    ],
    dir,
  );
  return { key: await readFile(join(dir, `${name}.key`)), cert: await readFile(join(dir, `${name}.crt`)) };
}

export async function createTestPki(): Promise<TestPki> {
  const dir = await mkdtemp(join(tmpdir(), 'webhook-pki-'));
  await Promise.all([makeCa(dir, 'ca'), makeCa(dir, 'rogue-ca')]);
  const [trusted, untrusted] = await Promise.all([
    makeServerCert(dir, 'ca', 'server'),
    makeServerCert(dir, 'rogue-ca', 'rogue-server'),
  ]);
  return {
    dir,
    caPath: join(dir, 'ca.crt'),
    trusted,
    untrusted,
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

export interface ProgrammedResponse {
  status: number;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Never answer (the connection is left open until the receiver closes). */
  hang?: boolean;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface Receiver {
  port: number;
  /** `https://localhost:<port>` */
  origin: string;
  requests: RecordedRequest[];
  /** Requests received and not yet answered or closed (a hanging one stays until its connection closes). */
  readonly inFlight: number;
  /** The most requests that were ever in flight at once. */
  readonly maxInFlight: number;
  close(): Promise<void>;
}

export async function startReceiver(opts: {
  key: Buffer;
  cert: Buffer;
  responses: ProgrammedResponse[];
}): Promise<Receiver> {
  const requests: RecordedRequest[] = [];
  const queue = [...opts.responses];
  let inFlight = 0;
  let maxInFlight = 0;
  const server = createServer({ key: opts.key, cert: opts.cert }, (req: IncomingMessage, res: ServerResponse) => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    res.once('close', () => inFlight--);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
      const next = queue.length > 1 ? queue.shift()! : queue[0] ?? { status: 200 };
      if (next.hang) return;
      res.writeHead(next.status, next.headers ?? {});
      res.end(next.body ?? '');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    port,
    origin: `https://localhost:${port}`,
    requests,
    get inFlight() {
      return inFlight;
    },
    get maxInFlight() {
      return maxInFlight;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
