// `npx node scripts/bench-engine.ts` is how the engine figures of docs/internals/performance.md are made: it must run as
// documented and say what it measured. Nothing about speed is asserted (tests never assert timing);
// what is asserted is what a reader of its line relies on: the realistic input (10 policies, 20 budget
// windows) is decided in full, to APPROVED, not cut short by a refusal, and the figures are numbers.
import test from 'ava';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

test('scripts/bench-engine.ts prints one line: figures, then the input it measured, decided in full', async (t) => {
  const { stdout } = await promisify(execFile)(process.execPath, ['scripts/bench-engine.ts', '200', '0'], { cwd: ROOT });
  const lines = stdout.trim().split('\n');
  t.is(lines.length, 1, stdout);
  const figures = /^decide: ([\d,]+) evaluations\/s, p50 ([\d.]+) µs, p99 ([\d.]+) µs \((.*)\)$/.exec(lines[0]);
  t.truthy(figures, lines[0]);
  const [, perSecond, p50, p99, about] = figures!;
  t.false(Number.isNaN(Number(perSecond.replaceAll(',', ''))) || Number.isNaN(Number(p50)) || Number.isNaN(Number(p99)), lines[0]);
  t.true(Number(p50) <= Number(p99), 'the median is not above the 99th percentile');
  t.regex(about, /^200 iterations after 0 to warm up, 10 policies, 20 budget windows, outcome APPROVED; \d+ scavenges of \d+ µs on average$/);
});
