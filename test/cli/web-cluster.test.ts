// WEB_CONCURRENCY: the cluster supervision (src/http/web-cluster.ts) through real processes, and the
// service's refusal to split an in-memory embedded database between processes.
import test from 'ava';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { get } from 'node:http';
import { promisify } from 'node:util';
import { portForChild } from '../../scripts/child-port.ts';
import { isAlive } from '../helpers/service-process.ts';

const run = promisify(execFile);

// The environment without ava's own IPC channel, which a child must not think it inherited.
const { NODE_CHANNEL_FD: _fd, NODE_CHANNEL_SERIALIZATION_MODE: _mode, ...baseEnv } = process.env;


/** One request on a fresh connection (no keep-alive, so the primary hands each to a process anew): `<pid>[ lead]`. */
const answerAt = (port: number) =>
  new Promise<string | null>((resolve) => {
    const req = get({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
      let text = '';
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve(text));
    });
    req.setTimeout(5_000, () => req.destroy());
    req.on('error', () => resolve(null));
  });
const pidAt = async (port: number) => {
  const answer = await answerAt(port);
  return answer === null ? null : parseInt(answer, 10);
};


async function until<T>(what: string, probe: () => Promise<T | undefined>, seconds = 60): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('WEB_CONCURRENCY=2 starts two processes on one port, replaces one that dies, and stops them all on SIGTERM', async (t) => {
  const port = await portForChild();
  const primary = spawn(process.execPath, ['test/cli/fixtures/cluster-pid-server.ts'], { env: { ...baseEnv, COUNT: '2', PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  primary.stderr!.on('data', (chunk) => (log += chunk));
  try {
    const seen = new Set<number>();
    await until('two distinct web processes', async () => {
      const pid = await pidAt(port);
      if (pid) seen.add(pid);
      return seen.size >= 2 ? true : undefined;
    });
    const [victim, survivor] = [...seen];
    t.not(victim, primary.pid);

    process.kill(victim, 'SIGKILL');
    const replacement = await until('a replacement process', async () => {
      const pid = await pidAt(port);
      return pid && pid !== victim && pid !== survivor ? pid : undefined;
    });
    t.false(isAlive(victim));
    t.regex(log, /web process exited/);

    primary.kill('SIGTERM');
    const [code] = await once(primary, 'exit');
    t.is(code, 0, log);
    t.false(isAlive(survivor));
    t.false(isAlive(replacement));
  } finally {
    if (primary.exitCode === null) primary.kill('SIGKILL');
  }
});

test('the process that replaces the lead (which runs the jobs and the wire listener) is the lead', async (t) => {
  const port = await portForChild();
  const primary = spawn(process.execPath, ['test/cli/fixtures/cluster-pid-server.ts'], { env: { ...baseEnv, COUNT: '2', PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
  t.teardown(() => void (primary.exitCode === null && primary.kill('SIGKILL')));
  const leads = async (exclude: number[]) => {
    const seen = new Map<number, boolean>();
    await until('both web processes', async () => {
      const answer = await answerAt(port);
      const pid = answer === null ? NaN : parseInt(answer, 10);
      if (!Number.isNaN(pid) && !exclude.includes(pid)) seen.set(pid, answer!.endsWith(' lead'));
      return seen.size >= 2 ? true : undefined;
    });
    return seen;
  };
  const before = await leads([]);
  const lead = [...before].filter(([, isLead]) => isLead).map(([pid]) => pid);
  t.is(lead.length, 1, 'one lead at the start');
  process.kill(lead[0], 'SIGKILL');
  const after = await leads(lead);
  t.is([...after.values()].filter(Boolean).length, 1, `one lead after it died: ${JSON.stringify([...after])}`);
  primary.kill('SIGTERM');
  t.is((await once(primary, 'exit'))[0], 0);
});

test('the service refuses WEB_CONCURRENCY above 1 on an in-memory embedded database, which one process holds', async (t) => {
  const env = { ...baseEnv, WEB_CONCURRENCY: '2', PORT: '0', MONGODB_URI: '', DATA_DIR: ':memory:' };
  const error = await run(process.execPath, ['src/main.ts'], { env, timeout: 60_000 }).then(
    () => null,
    (err: { code: number; stderr: string }) => err,
  );
  t.truthy(error, 'it started');
  t.is(error!.code, 2, error!.stderr);
  t.regex(error!.stderr, /WEB_CONCURRENCY=2 needs a store the web processes share: a DATA_DIR on disk/);
});

test('WEB_CONCURRENCY must be a whole number from 1 to 64', async (t) => {
  for (const value of ['0', 'two', '65']) {
    const error = await run(process.execPath, ['src/main.ts'], { env: { ...baseEnv, WEB_CONCURRENCY: value, PORT: '0', MONGODB_URI: '' }, timeout: 60_000 }).then(
      () => null,
      (err: { code: number; stderr: string }) => err,
    );
    t.is(error?.code, 2, value);
    t.regex(error!.stderr, /configuration: WEB_CONCURRENCY/);
  }
});
