// `npm start` as docs/operate/deployment.md runs it (`RUN_JOBS=0 PORT=3000 npm start &`):
// SIGTERM sent to npm (`kill %1`, a container whose first process is npm) must reach the service, which
// drains and exits, rather than stop npm and its shell and leave the service running, holding the port.
import test from 'ava';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

// `npm run worker` runs its script the same way; it is not tested here because the worker serves nothing
// that would show it has taken SIGTERM over (a signal sent before that finds the default action).
test('SIGTERM to `npm start` stops the service it started', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'npm-scripts-'));
  // A process group of its own, so that the teardown can end whatever is left of it.
  const npm = spawn('npm', ['start'], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', DATA_DIR: dataDir, ADMIN_TOKEN: 'npm-scripts-admin-token-0123456789', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  t.teardown(async () => {
    try {
      process.kill(-npm.pid!, 'SIGKILL');
    } catch {
      // the group is gone: nothing was left running
    }
    await rm(dataDir, { recursive: true, force: true });
  });
  let stdout = '';
  let started!: () => void;
  const isReady = new Promise<void>((resolve) => (started = resolve));
  npm.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    if (/"msg":"listening"/.test(stdout)) started();
  });
  npm.stderr.setEncoding('utf8').on('data', (chunk: string) => t.log(chunk.trim()));
  const exited = once(npm, 'exit');
  // 'close': npm has exited and every process that held its output has too.
  const closed = once(npm, 'close');
  await isReady;
  // A first answer: the process took SIGTERM over (in the step that logged `listening`) before serving anything.
  const port = /"msg":"listening","port":(\d+)/.exec(stdout)![1];
  t.is((await fetch(`http://127.0.0.1:${port}/health/live`)).status, 200);

  npm.kill('SIGTERM');
  await exited;
  // npm exits after its child: by now nothing of its process group may be left running.
  const left = groupAlive(npm.pid!);
  t.false(left, 'the service npm started is still running after npm exited');
  if (left) return;
  await closed;
  // The service's own shutdown ran (it logs `stopped` last), so it no longer holds the port or the store.
  t.regex(stdout, /"msg":"stopped","signal":"SIGTERM"/);
});
