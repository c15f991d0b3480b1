// src/small-thread.ts: under the web process's --max-semi-space-size=16, the jobs and checkpointer
// threads still get a small young generation, and the flag is back to 16 MB for any thread after them.
import test from 'ava';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);
const PROBE = 'test/worker/fixtures/small-thread-probe.ts';
type Probe = { small: number[]; ordinary: number };

for (const [label, args, env] of [
  ['on the command line', ['--max-semi-space-size=16', PROBE], {}],
  ['in NODE_OPTIONS', [PROBE], { NODE_OPTIONS: '--max-semi-space-size=16' }],
] as const) {
  test(`threads started together get a small young generation; the flag ${label} is restored after them`, async (t) => {
    const { stdout } = await run(process.execPath, [...args], { env: { ...process.env, ...env } });
    const probe = JSON.parse(stdout) as Probe;
    t.is(probe.small.length, 2);
    for (const mb of probe.small) t.true(mb <= 8, `a small thread's young generation reached ${mb} MB`);
    // 16 MB semi-spaces: a young generation of 32 MB once the thread allocates enough.
    t.true(probe.ordinary >= 24, `a later thread's young generation reached only ${probe.ordinary} MB`);
  });
}
