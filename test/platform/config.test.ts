// Settings checked at start (src/config.ts): a bad value stops the process with a message naming it.
import test from 'ava';
import { ConfigError, loadConfig } from '../../src/config.ts';

const config = (env: Record<string, string>) => loadConfig({ LOG_LEVEL: 'error', ...env });

test('JOBS_PROCESS_EVERY is a duration: read in its units, refused when it is not one or out of range', (t) => {
  t.is(config({}).jobsProcessEveryMs, 5_000);
  t.is(config({ JOBS_PROCESS_EVERY: '5 seconds' }).jobsProcessEveryMs, 5_000);
  t.is(config({ JOBS_PROCESS_EVERY: '1 minute' }).jobsProcessEveryMs, 60_000);
  t.is(config({ JOBS_PROCESS_EVERY: '500 ms' }).jobsProcessEveryMs, 500);
  t.is(config({ JOBS_PROCESS_EVERY: '250' }).jobsProcessEveryMs, 250);
  t.is(config({ JOBS_PROCESS_EVERY: '1 Hour' }).jobsProcessEveryMs, 3_600_000);
  for (const bad of ['banana', '5 fortnights', '-1 second', '1.5 seconds', '10 ms', '2 hours']) {
    const error = t.throws(() => config({ JOBS_PROCESS_EVERY: bad }), { instanceOf: ConfigError }, bad);
    t.regex(error!.message, /JOBS_PROCESS_EVERY/);
  }
});

test('TRUST_PROXY defaults to off (clients reach `npm start` directly) and takes only 1/true or 0/false', (t) => {
  t.false(config({}).trustProxy);
  t.true(config({ TRUST_PROXY: '1' }).trustProxy);
  t.false(config({ TRUST_PROXY: '0' }).trustProxy);
  t.throws(() => config({ TRUST_PROXY: 'yes' }), { instanceOf: ConfigError, message: /TRUST_PROXY/ });
});
