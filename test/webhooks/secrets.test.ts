import test from 'ava';
import fc from 'fast-check';
import { randomBytes } from 'node:crypto';
import {
  SecretDecryptionError,
  WEBHOOK_SECRET_PATTERN,
  decryptSecret,
  encryptSecret,
  generateWebhookSecret,
  parseEncryptionKey,
} from '../../src/webhooks/secrets.ts';

const KEY = Buffer.from('000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f', 'hex');

test('generated secrets match the docs/reference/contract.md §2.8 pattern and differ', (t) => {
  const seen = new Set<string>();
  for (let i = 0; i < 200; i++) {
    const s = generateWebhookSecret();
    t.regex(s, /^cmp_whs_[A-Za-z0-9_-]{43}$/);
    t.true(WEBHOOK_SECRET_PATTERN.test(s));
    t.is(Buffer.from(s.slice(8), 'base64url').length, 32);
    seen.add(s);
  }
  t.is(seen.size, 200);
});

test('parseEncryptionKey accepts hex, base64 and base64url forms of 32 bytes', (t) => {
  const bytes = randomBytes(32);
  t.deepEqual(parseEncryptionKey(bytes.toString('hex')), bytes);
  t.deepEqual(parseEncryptionKey(bytes.toString('hex').toUpperCase()), bytes);
  t.deepEqual(parseEncryptionKey(bytes.toString('base64')), bytes);
  t.deepEqual(parseEncryptionKey(bytes.toString('base64').replace(/=+$/, '')), bytes);
  t.deepEqual(parseEncryptionKey(bytes.toString('base64url')), bytes);
  t.deepEqual(parseEncryptionKey(`  ${bytes.toString('hex')}\n`), bytes);
});

test('parseEncryptionKey refuses other lengths and junk with a clear message that hides the value', (t) => {
  const bad = [
    '',
    'secret',
    randomBytes(16).toString('hex'),
    randomBytes(31).toString('base64'),
    randomBytes(33).toString('base64'),
    randomBytes(32).toString('hex').slice(1),
    `${randomBytes(32).toString('base64')}!`,
    'zz'.repeat(32),
  ];
  for (const value of bad) {
    const err = t.throws(() => parseEncryptionKey(value));
    t.regex(err?.message ?? '', /32 bytes/);
    if (value.length > 6) t.false(err?.message.includes(value));
  }
});

test('encrypt/decrypt round-trips and every blob is fresh', (t) => {
  const secret = generateWebhookSecret();
  const a = encryptSecret(KEY, secret);
  const b = encryptSecret(KEY, secret);
  t.not(a, b);
  t.regex(a, /^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/);
  t.false(a.includes(secret.slice(8)));
  t.is(decryptSecret(KEY, a), secret);
  t.is(decryptSecret(KEY, b), secret);
});

test('property: round-trip for any string', (t) => {
  fc.assert(fc.property(fc.string({ unit: 'grapheme', maxLength: 100 }), (s) => decryptSecret(KEY, encryptSecret(KEY, s)) === s));
  t.pass();
});

test('tampering with any part, the key or the version is detected', (t) => {
  const blob = encryptSecret(KEY, generateWebhookSecret());
  const parts = blob.split('.');
  for (let i = 1; i < 4; i++) {
    const bytes = Buffer.from(parts[i], 'base64url');
    bytes[0] ^= 0x01;
    const changed = [...parts];
    changed[i] = bytes.toString('base64url');
    t.throws(() => decryptSecret(KEY, changed.join('.')), { instanceOf: SecretDecryptionError }, `part ${i}`);
  }
  const otherKey = Buffer.from(KEY);
  otherKey[31] ^= 0x80;
  t.throws(() => decryptSecret(otherKey, blob), { instanceOf: SecretDecryptionError });
  t.throws(() => decryptSecret(KEY, blob.replace(/^v1\./, 'v2.')), { instanceOf: SecretDecryptionError });
  t.throws(() => decryptSecret(KEY, 'not a blob'), { instanceOf: SecretDecryptionError });
  t.throws(() => decryptSecret(KEY, `${parts[0]}.${parts[1]}.${parts[2]}`), { instanceOf: SecretDecryptionError });
  t.throws(() => decryptSecret(KEY, `${blob}.x`), { instanceOf: SecretDecryptionError });
});

test('associated data binds a blob to its owner', (t) => {
  const blob = encryptSecret(KEY, 'cmp_whs_x', 'endpoint-1');
  t.is(decryptSecret(KEY, blob, 'endpoint-1'), 'cmp_whs_x');
  t.throws(() => decryptSecret(KEY, blob, 'endpoint-2'), { instanceOf: SecretDecryptionError });
  t.throws(() => decryptSecret(KEY, blob), { instanceOf: SecretDecryptionError });
});

test('encrypt and decrypt refuse keys that are not 32 bytes', (t) => {
  t.throws(() => encryptSecret(Buffer.alloc(16), 's'), { instanceOf: RangeError });
  t.throws(() => decryptSecret(Buffer.alloc(33), encryptSecret(KEY, 's')), { instanceOf: RangeError });
});
