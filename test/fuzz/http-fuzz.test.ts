// A bounded run of the HTTP fuzzer in `npm test` (docs/internals/testing.md); `npm run fuzz` runs it long.
import test from 'ava';
import fc from 'fast-check';
import { check, requestArb, restore, startFuzzTarget, type FuzzTarget } from './harness.ts';

let target: FuzzTarget;

test.before(async () => {
  target = await startFuzzTarget();
});
test.after.always(() => target?.close());

test('hostile requests to every route: never a 5xx, always the documented error body, nothing written when refused', async (t) => {
  const codes = new Set<string>();
  let cases = 0;
  await fc.assert(
    fc.asyncProperty(requestArb(target), async (r) => {
      if (++cases % 100 === 0) await restore(target);
      const code = await check(target, r);
      if (code) codes.add(code);
    }),
    { numRuns: Number(process.env.FUZZ_TEST_RUNS ?? 1000), endOnFailure: true, ...(process.env.FUZZ_SEED ? { seed: Number(process.env.FUZZ_SEED), verbose: 2 } : {}) },
  );
  // The generator reaches the error paths it is meant to, not just one of them.
  for (const code of ['invalid_request', 'malformed_json', 'unauthorized', 'not_found', 'unsupported_media_type']) t.true(codes.has(code), `${code} among ${[...codes].join(', ')}`);
});
