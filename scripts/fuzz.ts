// npm run fuzz: the HTTP fuzzer of test/fuzz/harness.ts, long. FUZZ_RUNS (default 5000) cases,
// FUZZ_SEED to replay a run. Prints each failure as it happens and one JSON summary line: cases,
// distinct error codes (with counts), status counts, 5xx count and rule violations. Exit 1 on any.
import fc from 'fast-check';
import { judge, refused, requestArb, restore, send, startFuzzTarget, storeDigest, ttlCutoff } from '../test/fuzz/harness.ts';

const runs = Number(process.env.FUZZ_RUNS ?? 5000);
const seed = process.env.FUZZ_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FUZZ_SEED);
const target = await startFuzzTarget();
const codes = new Map<string, number>();
const statuses = new Map<number, number>();
let fivexx = 0;
const violations: string[] = [];
const started = Date.now();

const samples = fc.sample(requestArb(target), { numRuns: runs, seed });
for (const [i, r] of samples.entries()) {
  if (i % 100 === 99) await restore(target);
  const cutoff = ttlCutoff();
  const before = await storeDigest(target, cutoff);
  let res;
  try {
    res = await send(target, r);
  } catch (err) {
    violations.push(`#${i} transport: ${String(err)} ${r.method} ${r.path.slice(0, 100)}`);
    continue;
  }
  statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
  if (res.status >= 500) fivexx++;
  try {
    const code = judge(r, res);
    if (code) codes.set(code, (codes.get(code) ?? 0) + 1);
    if (refused(res, code) && (await storeDigest(target, cutoff)) !== before) throw new Error(`refused request wrote to the store: ${r.method} ${r.path.slice(0, 100)} -> ${res.status}`);
  } catch (err) {
    violations.push(`#${i} ${(err as Error).message}`);
    process.stdout.write(`VIOLATION #${i}: ${(err as Error).message}\n  request: ${JSON.stringify({ ...r, body: r.body?.slice(0, 300) ?? null })}\n`);
  }
}
await target.close();
const summary = {
  cases: samples.length,
  seed,
  seconds: Math.round((Date.now() - started) / 1000),
  distinctCodes: codes.size,
  codes: Object.fromEntries([...codes].sort()),
  statuses: Object.fromEntries([...statuses].sort(([a], [b]) => a - b)),
  fivexx,
  violations: violations.length,
};
process.stdout.write(JSON.stringify(summary) + '\n');
process.exit(violations.length > 0 || fivexx > 0 ? 1 : 0);
