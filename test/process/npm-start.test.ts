// `npm start` as an operator (or a container whose command it is) runs it: SIGTERM goes to npm, which
// passes it to its child. That child must be the service itself, or the service never hears it.
import test from 'ava';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { isAlive, SERVICE_ADMIN_TOKEN, tempDataDir } from '../helpers/service-process.ts';

/** Every process below pid (from /proc). */
function descendants(pid: number): number[] {
  let children: number[];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
  return children.flatMap((child) => [child, ...descendants(child)]);
}


test('SIGTERM to `npm start` reaches the service, which stops gracefully, and leaves no process behind', async (t) => {
  const { NODE_CHANNEL_FD: _fd, NODE_CHANNEL_SERIALIZATION_MODE: _mode, ...env } = process.env;
  const npm = spawn('npm', ['start', '--silent'], {
    env: { ...env, PORT: '0', ADMIN_TOKEN: SERVICE_ADMIN_TOKEN, LOG_LEVEL: 'info', DATA_DIR: tempDataDir(t) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  npm.stdout.on('data', (d) => (output += d));
  npm.stderr.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => npm.once('exit', resolve));
  let below: number[] = [];
  t.teardown(() => {
    for (const pid of [npm.pid!, ...below]) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  });
  while (!output.includes('"msg":"listening"')) {
    if (npm.exitCode !== null) t.fail(output);
    await sleep(50);
  }
  below = descendants(npm.pid!);
  npm.kill('SIGTERM');
  const code = await exited;
  for (let i = 0; i < 100 && below.some(isAlive); i++) await sleep(50);
  t.regex(output, /"msg":"stopping","signal":"SIGTERM"/, output);
  t.regex(output, /"msg":"stopped"/);
  t.is(code, 0);
  t.deepEqual(below.filter(isAlive), [], 'no process left running');
});
