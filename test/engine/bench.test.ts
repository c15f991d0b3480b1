import test from 'ava';
import { benchEngine } from '../../scripts/bench-engine.ts';

test('the engine benchmark runs its realistic input (smoke test; no timing is asserted)', (t) => {
  const result = benchEngine(20, 0);
  t.is(result.outcome, 'APPROVED');
  t.is(result.windows, 20);
  t.true(result.evaluationsPerSecond > 0);
});
