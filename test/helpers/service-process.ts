// The service as a real process (`node src/main.ts`) on a given DATA_DIR, for tests of what
// survives a restart, a crash, or a second process on the same data.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { ExecutionContext } from 'ava';

/**
 * Passwords hashed at scrypt's N=2^10 in the tests' services, instead of the production 2^17 (PASSWORD_SCRYPT_N): the same hash,
 * checks and refusals, at a thousandth of the CPU; the tests set and check hundreds of passwords.
 */
export const TEST_SCRYPT_N = '1024';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const SERVICE_ADMIN_TOKEN = 'process-admin-token-0123456789abcdef';

/** Whether a process of this id is running (signal 0 only checks). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A fresh directory removed after the test; DATA_DIR is `<it>/data` (not created yet). */
export function tempDataDir(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'spend-control-data-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'data');
}

export interface ApiResponse {
  status: number;
  body: any;
}

export interface ServiceProcess {
  url: string;
  child: ChildProcess;
  output(): string;
  request(path: string, options?: { key?: string; body?: unknown; method?: string }): Promise<ApiResponse>;
  admin(path: string, body?: unknown): Promise<ApiResponse>;
  /** Sends signal and waits for the exit; returns the exit code (null when killed). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Runs the service to completion (for start-up failures): exit code and output. `args` follow `src/main.ts`. */
export function runService(env: Record<string, string>, args: string[] = []): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['src/main.ts', ...args], { cwd: ROOT, env: { ...process.env, PORT: '0', ADMIN_TOKEN: SERVICE_ADMIN_TOKEN, LOG_LEVEL: 'info', PASSWORD_SCRYPT_N: TEST_SCRYPT_N, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) =>
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

/**
 * The port a service started with PORT=0 (and LOG_LEVEL=info) bound, from its "listening" log line.
 * Better than a port picked beforehand: another test's service can take that one first, and would then
 * answer every request meant for this one.
 */
export function listeningPort(output: string): number | undefined {
  return Number(/"msg":"listening","port":(\d+)/.exec(output)?.[1]) || undefined;
}

export interface WatchedProcess {
  child: ChildProcess;
  /** Standard output and error so far. */
  output(): string;
  exited: Promise<number | null>;
}

/** A process run from the checkout's root, killed when the test ends if it is still running. */
export function spawnWatched(t: ExecutionContext, command: string, args: string[], env: Record<string, string>): WatchedProcess {
  const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return { child, output: () => output, exited };
}

export async function startService(t: ExecutionContext, dataDir: string, env: Record<string, string> = {}): Promise<ServiceProcess> {
  const { child, output, exited } = spawnWatched(t, process.execPath, ['src/main.ts'], { PORT: '0', ADMIN_TOKEN: SERVICE_ADMIN_TOKEN, LOG_LEVEL: 'info', DATA_DIR: dataDir, PASSWORD_SCRYPT_N: TEST_SCRYPT_N, ...env });
  const deadline = Date.now() + 60_000;
  let port: number | undefined;
  while (port === undefined || !(await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false))) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`the service did not start:\n${output()}`);
    port ??= listeningPort(output());
    await sleep(100);
  }
  const url = `http://127.0.0.1:${port}`;
  const call = async (path: string, method: string, auth: string | undefined, body: unknown): Promise<ApiResponse> => {
    const headers: Record<string, string> = {};
    if (auth) headers.authorization = `Bearer ${auth}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  return {
    url,
    child,
    output,
    request: (path, o = {}) => call(path, o.method ?? (o.body === undefined ? 'GET' : 'POST'), o.key, o.body),
    admin: (path, body) => call(path, body === undefined ? 'GET' : 'POST', SERVICE_ADMIN_TOKEN, body),
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
