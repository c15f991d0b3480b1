import test from 'ava';
import { version } from 'uuid';
import { isUuid, newId, newRandomId } from '../../src/ids.ts';

test('newId makes UUIDv7s whose timestamp is the time they were made', (t) => {
  const before = Date.now();
  const id = newId();
  const after = Date.now();
  t.true(isUuid(id));
  t.is(version(id), 7);
  t.regex(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  const ms = parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
  t.true(ms >= before && ms <= after + 1);
});

test('newId is strictly increasing and unique across many pool refills', (t) => {
  const ids = Array.from({ length: 20_000 }, () => newId());
  for (let i = 1; i < ids.length; i++) {
    if (!(ids[i - 1] < ids[i])) t.fail(`${ids[i - 1]} !< ${ids[i]} at ${i}`);
  }
  t.is(new Set(ids).size, ids.length);
  // The random tail (40 bits) is not repeated from one pool block of 256 ids to the next.
  const tails = ids.slice(0, 2_000).map((id) => id.slice(-10));
  t.is(new Set(tails).size, tails.length);
});

test('newRandomId makes UUIDv4s', (t) => {
  const id = newRandomId();
  t.true(isUuid(id));
  t.is(version(id), 4);
});
