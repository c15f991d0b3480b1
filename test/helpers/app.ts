// Boots the real application on an ephemeral port against a fresh store (embedded, or MongoDB when
// TEST_MONGODB_URI is set), and gives tests a small fetch wrapper. Built by the same composition root
// as the service (src/compose.ts): the same capabilities, indexes, dependencies and jobs.
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../../src/config.ts';
import { createLogger, type Logger } from '../../src/log.ts';
import { composeDeps, createIndexes, startJobs } from '../../src/compose.ts';
import { serviceApp } from '../../src/service-app.ts';
import { createHttpServer, type ServerTimeouts } from '../../src/http/server.ts';
import type { AppDeps } from '../../src/app-deps.ts';
import type { Store } from '../../src/store/store.ts';
import { agendaScheduler, noScheduler, type Scheduler } from '../../src/jobs/scheduler.ts';
import { createAgenda } from '../../src/jobs/agenda.ts';
import { testStore } from './store.ts';
import { checkAgainstDocument } from './contract.ts';
import { TEST_SCRYPT_N } from './service-process.ts';

export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export interface RequestOptions {
  method?: string;
  key?: string | null;
  body?: unknown;
  /** Sent as-is, without JSON encoding. */
  raw?: string | Buffer;
  headers?: Record<string, string>;
}

export interface TestApp {
  url: string;
  deps: AppDeps;
  store: Store;
  request(path: string, options?: RequestOptions): Promise<ApiResponse>;
  admin(path: string, options?: Omit<RequestOptions, 'key'>): Promise<ApiResponse>;
  close(): Promise<void>;
}

export async function startApp(
  options: {
    env?: Record<string, string>;
    store?: Store;
    now?: () => Date;
    scheduler?: Scheduler;
    /** Runs the real Agenda worker in this process, polling often so tests need not wait long. */
    jobs?: { sweepEvery?: string };
    /** The server's timeouts; the production values by default. */
    timeouts?: ServerTimeouts;
    /** The service's logger; errors to stderr by default. */
    log?: Logger;
  } = {},
): Promise<TestApp> {
  const store = options.store ?? (await testStore());
  await createIndexes(store.db);
  const agenda = options.jobs ? await createAgenda(store, { processEvery: 100, lockLifetimeMs: 5000 }) : null;
  const config = loadConfig({ ADMIN_TOKEN, LOG_LEVEL: 'error', BASE_URL: 'http://127.0.0.1:0', PASSWORD_SCRYPT_N: TEST_SCRYPT_N, ...options.env });
  const log = options.log ?? createLogger('error', (line) => process.stderr.write(line + '\n'));
  const deps = composeDeps({ config, store, log, now: options.now, scheduler: options.scheduler ?? (agenda ? agendaScheduler(agenda) : noScheduler) });
  const stopWorker = agenda ? await startJobs(deps, agenda, { sweepEvery: options.jobs?.sweepEvery ?? '1 second' }) : null;
  const server = createHttpServer(serviceApp(deps), options.timeouts).listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const request = async (path: string, o: RequestOptions = {}): Promise<ApiResponse> => {
    const headers: Record<string, string> = { ...o.headers };
    if (o.key) headers.authorization = `Bearer ${o.key}`;
    let body: string | Buffer | undefined;
    if (o.raw !== undefined) body = o.raw;
    else if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(url + path, { method: o.method ?? (body === undefined ? 'GET' : 'POST'), headers, body });
    const text = await res.text();
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    const response = { status: res.status, headers: res.headers, body: parsed, text };
    checkAgainstDocument(o.method ?? (body === undefined ? 'GET' : 'POST'), path, response);
    return response;
  };

  return {
    url,
    deps,
    store,
    request,
    admin: (path, o = {}) => request(path, { ...o, key: ADMIN_TOKEN }),
    async close() {
      if (stopWorker) await stopWorker();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (!options.store) await store.close();
    },
  };
}

/** From now on, the app's warnings and errors as `level message` lines (still logged as before). */
export function recordWarnings(app: TestApp): string[] {
  const logged: string[] = [];
  for (const level of ['warn', 'error'] as const) {
    const original = app.deps.log[level].bind(app.deps.log);
    app.deps.log[level] = (message: string, fields?: Record<string, unknown>) => {
      logged.push(`${level} ${message}`);
      original(message, fields);
    };
  }
  return logged;
}
