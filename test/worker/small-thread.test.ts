// src/small-thread.ts: under the web process's --max-semi-space-size, the jobs and checkpointer
// threads still get a small young generation, and the flag is back to the process's value for any
// thread after them. The probe reports each thread's usual young generation (the median while it
// allocates): 2 MB semi-spaces make 4 MB, 8 MB make 16, and V8's defaults 32 and more (by the
// machine's memory), so a value lost in the restore shows.
import test from 'ava';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);
const PROBE = 'test/worker/fixtures/small-thread-probe.ts';
type Probe = { small: number[]; ordinary: number };

for (const [label, args, env] of [
  ['on the command line', ['--max-semi-space-size=8', PROBE], {}],
  ['in NODE_OPTIONS', [PROBE], { NODE_OPTIONS: '--max_semi_space_size=8' }],
  ['on the command line over NODE_OPTIONS', ['--max-semi-space-size=8', PROBE], { NODE_OPTIONS: '--max-semi-space-size=64' }],
] as const) {
  test(`threads started together get a small young generation; the flag ${label} is restored after them`, async (t) => {
    const { stdout } = await run(process.execPath, [...args], { env: { ...process.env, ...env } });
    const probe = JSON.parse(stdout) as Probe;
    t.is(probe.small.length, 2);
    for (const mb of probe.small) t.true(mb <= 8, `a small thread's young generation was ${mb} MB`);
    t.true(probe.ordinary >= 12 && probe.ordinary < 32, `a later thread's young generation was ${probe.ordinary} MB: about 16, never V8's default of 32 and more`);
  });
}

test('a thread that cannot be created leaves the flag as it was', async (t) => {
  const { stdout } = await run(process.execPath, ['--max-semi-space-size=8', PROBE], { env: { ...process.env, PROBE_FAIL_FIRST: '1' } });
  const probe = JSON.parse(stdout) as Probe;
  t.true(probe.ordinary >= 12 && probe.ordinary < 32, `a later thread's young generation was ${probe.ordinary} MB: about 16, never V8's default of 32 and more`);
});
