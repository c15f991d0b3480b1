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

test('WEBHOOK_ATTEMPT_LEASE and WEBHOOK_SWEEP_EVERY default to a minute; a lease within the 10 s request timeout is refused', (t) => {
  t.like(config({}), { webhookAttemptLeaseMs: 60_000, webhookSweepEveryMs: 60_000 });
  t.like(config({ WEBHOOK_ATTEMPT_LEASE: '15 seconds', WEBHOOK_SWEEP_EVERY: '1 second' }), { webhookAttemptLeaseMs: 15_000, webhookSweepEveryMs: 1_000 });
  for (const [name, bad] of [['WEBHOOK_ATTEMPT_LEASE', '10 seconds'], ['WEBHOOK_ATTEMPT_LEASE', '2 hours'], ['WEBHOOK_SWEEP_EVERY', '10 ms'], ['WEBHOOK_SWEEP_EVERY', 'soon']]) {
    const error = t.throws(() => config({ [name]: bad }), { instanceOf: ConfigError }, bad);
    t.regex(error!.message, new RegExp(name));
  }
});

test("PASSWORD_SCRYPT_N is OWASP's 2^17 unless set; lower only where NODE_ENV names development or tests, and a power of two", (t) => {
  t.is(config({}).passwordScryptN, 2 ** 17);
  t.is(config({ PASSWORD_SCRYPT_N: '1024', NODE_ENV: 'test' }).passwordScryptN, 1024);
  t.is(config({ PASSWORD_SCRYPT_N: '262144', NODE_ENV: 'production' }).passwordScryptN, 2 ** 18);
  for (const env of [{ PASSWORD_SCRYPT_N: '1024', NODE_ENV: 'production' } as Record<string, string>, { PASSWORD_SCRYPT_N: '1000' }, { PASSWORD_SCRYPT_N: '512' }, { PASSWORD_SCRYPT_N: String(2 ** 21) }]) {
    const error = t.throws(() => config(env), { instanceOf: ConfigError }, JSON.stringify(env));
    t.regex(error!.message, /PASSWORD_SCRYPT_N/);
  }
});

test('TRUST_PROXY defaults to off (clients reach `npm start` directly) and takes only 1/true or 0/false', (t) => {
  t.false(config({}).trustProxy);
  t.true(config({ TRUST_PROXY: '1' }).trustProxy);
  t.false(config({ TRUST_PROXY: '0' }).trustProxy);
  t.throws(() => config({ TRUST_PROXY: 'yes' }), { instanceOf: ConfigError, message: /TRUST_PROXY/ });
});

test('SMTP_URL and SMTP_FROM: unset sends no email; a URL other than smtp(s) or a missing or malformed From stops the start', (t) => {
  t.is(config({}).smtp, null);
  t.deepEqual(config({ SMTP_URL: 'smtp://user:secret@mail.example.com:587', SMTP_FROM: 'Spend control <spend@example.com>' }).smtp, {
    url: 'smtp://user:secret@mail.example.com:587',
    from: 'Spend control <spend@example.com>',
  });
  t.is(config({ SMTP_URL: 'smtps://mail.example.com', SMTP_FROM: 'spend@example.com' }).smtp?.from, 'spend@example.com');
  t.throws(() => config({ SMTP_URL: 'https://mail.example.com', SMTP_FROM: 'spend@example.com' }), { instanceOf: ConfigError, message: /SMTP_URL must use smtp or smtps/ });
  t.throws(() => config({ SMTP_URL: 'not a url', SMTP_FROM: 'spend@example.com' }), { instanceOf: ConfigError, message: /SMTP_URL/ });
  t.throws(() => config({ SMTP_URL: 'smtp://mail.example.com' }), { instanceOf: ConfigError, message: /SMTP_FROM must be set/ });
  for (const bad of ['spend', 'Spend <spend>', 'a@b.example\r\nBcc: x@y.example']) {
    t.throws(() => config({ SMTP_URL: 'smtp://mail.example.com', SMTP_FROM: bad }), { instanceOf: ConfigError, message: /SMTP_FROM/ }, bad);
  }
});

test('APPROVAL_REMINDER_AT: a share of the time left, a duration before expiry, or off; a quarter left by default', (t) => {
  t.deepEqual(config({}).approvalReminder, { kind: 'FRACTION_LEFT', fraction: 0.25 });
  t.deepEqual(config({ APPROVAL_REMINDER_AT: '0.1' }).approvalReminder, { kind: 'FRACTION_LEFT', fraction: 0.1 });
  t.deepEqual(config({ APPROVAL_REMINDER_AT: '50%' }).approvalReminder, { kind: 'FRACTION_LEFT', fraction: 0.5 });
  t.deepEqual(config({ APPROVAL_REMINDER_AT: 'PT1H30M' }).approvalReminder, { kind: 'BEFORE_EXPIRY', ms: 5_400_000 });
  t.is(config({ APPROVAL_REMINDER_AT: 'off' }).approvalReminder, null);
  for (const bad of ['1', '1.5', '0.0', '100%', 'PT0S', 'P', 'soon', '-0.2']) {
    t.throws(() => config({ APPROVAL_REMINDER_AT: bad }), { instanceOf: ConfigError, message: /APPROVAL_REMINDER_AT/ }, bad);
  }
});

test('BASE_URL and AUTH_URL are origins: a path, a query, a fragment, credentials or another scheme stop the start', (t) => {
  t.is(config({ BASE_URL: 'https://spend.example.com/' }).baseUrl, 'https://spend.example.com');
  t.is(config({ BASE_URL: 'https://spend.example.com:8443' }).authUrl, 'https://spend.example.com:8443');
  for (const name of ['BASE_URL', 'AUTH_URL']) {
    for (const [bad, why] of [
      ['https://example.com/spend', /without a path/],
      ['https://example.com/spend/', /without a path/],
      ['https://example.com/?a=1', /query or fragment/],
      ['https://example.com/#top', /query or fragment/],
      ['https://user:secret@example.com', /user name or password/],
      ['ftp://example.com', /http or https/],
      ['example.com', /absolute http\(s\) URL/],
    ] as const) {
      t.throws(() => config({ [name]: bad }), { instanceOf: ConfigError, message: new RegExp(`${name} .*${why.source}`) }, `${name}=${bad}`);
    }
  }
});

test('ADMIN_TOKEN and METRICS_TOKEN are one printable ASCII word: a token no client could send as a bearer stops the start', (t) => {
  const long = 'operator-token-0123456789';
  for (const name of ['ADMIN_TOKEN', 'METRICS_TOKEN']) {
    // White space splits `Authorization: Bearer <token>`; a CR from a Windows .env file cannot be sent at all;
    // a header is read as Latin-1, so a character beyond ASCII never matches what the client meant.
    for (const bad of [`${long} with spaces`, `${long}\tx`, `${long}\r`, `${long}é`, `${long}\u0000`]) {
      t.throws(() => config({ [name]: bad }), { instanceOf: ConfigError, message: new RegExp(`${name} must be printable ASCII without spaces`) }, JSON.stringify(bad));
    }
    t.notThrows(() => config({ [name]: `${long}!#$%&'*+./:;<=>?@[]^_\`{|}~` }));
  }
});

test('WEBHOOK_UNSAFE_ALLOW_LOCAL is allowed only where NODE_ENV names development, so a misspelt production is not left open', (t) => {
  t.true(config({ WEBHOOK_UNSAFE_ALLOW_LOCAL: '1' }).webhookUnsafeAllowLocal);
  t.true(config({ WEBHOOK_UNSAFE_ALLOW_LOCAL: '1', NODE_ENV: 'development' }).webhookUnsafeAllowLocal);
  t.true(config({ WEBHOOK_UNSAFE_ALLOW_LOCAL: '1', NODE_ENV: 'test' }).webhookUnsafeAllowLocal);
  for (const nodeEnv of ['production', 'prod', 'staging', 'Production']) {
    t.throws(() => config({ WEBHOOK_UNSAFE_ALLOW_LOCAL: '1', NODE_ENV: nodeEnv }), { instanceOf: ConfigError, message: /WEBHOOK_UNSAFE_ALLOW_LOCAL is allowed only when NODE_ENV is unset, development or test/ }, nodeEnv);
    t.false(config({ NODE_ENV: nodeEnv }).webhookUnsafeAllowLocal, nodeEnv);
  }
});
