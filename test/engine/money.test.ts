// MinorAmount on input (docs/reference/contract.md §2.1; docs/reference/decisions.md, amount range and amounts
// written as JSON numbers) against a model of the rules: a decimal string or a JSON integer literal of whole
// minor units, 1 to 2^53-1, read exactly and written back as its plain decimal digits; never a float.
import assert from 'node:assert/strict';
import test from 'ava';
import fc from 'fast-check';
import { parseJson } from '../../src/json.ts';
import { fromStored, minorAmountFault, parseMinor, toStored, toWire } from '../../src/money.ts';

const MAX = 2n ** 53n - 1n;

/** What the rules say of an amount written as `text`, in a JSON string or as a JSON number. */
function model(text: string): { fault: ReturnType<typeof minorAmountFault>; value: bigint | null } {
  // A string holds digits with an optional minus; a number is an integer only when written without a fraction or exponent.
  if (!/^-?[0-9]+$/.test(text)) return { fault: 'AMOUNT_NOT_INTEGER', value: null };
  const value = BigInt(text);
  if (value <= 0n) return { fault: 'AMOUNT_NOT_POSITIVE', value: null };
  if (value > MAX) return { fault: 'AMOUNT_TOO_LARGE', value: null };
  return { fault: null, value };
}

const digits = fc.oneof(
  fc.bigInt(0n, 10_000n).map(String),
  fc.bigInt(MAX - 3n, MAX + 3n).map(String),
  fc.bigInt(0n, 10n ** 30n).map(String),
);
const written = fc.oneof(
  { weight: 4, arbitrary: fc.tuple(fc.constantFrom('', '', '-', '0', '00'), digits).map(([prefix, d]) => prefix + d) },
  { weight: 1, arbitrary: fc.tuple(digits, fc.constantFrom('.0', '.5', 'e0', 'e3', 'E2', '.00')).map(([d, tail]) => d + tail) },
);

test('property: an amount written as a string is read exactly and written back as its plain digits', (t) => {
  fc.assert(
    fc.property(written, fc.constantFrom('', '', ' ', '+', '\u0661', '１'), (text, noise) => {
      const body = parseJson(JSON.stringify({ amountMinor: noise + text })) as Record<string, unknown>;
      const expected = model(noise + text);
      assert.equal(minorAmountFault(body, 'amountMinor'), expected.fault, noise + text);
      if (expected.value !== null) {
        assert.equal(parseMinor(body.amountMinor), expected.value);
        assert.equal(toWire(parseMinor(body.amountMinor)!), expected.value.toString());
        assert.equal(fromStored(toStored(expected.value)), expected.value);
      }
    }),
    { numRuns: 1000 },
  );
  t.pass();
});

test('property: an amount written as a JSON number is whole only as an integer literal, and exact up to 2^53-1', (t) => {
  fc.assert(
    fc.property(written, (text) => {
      fc.pre(/^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/.test(text)); // leading zeros are not JSON (malformed_json)
      const body = parseJson(`{"amountMinor": ${text}}`) as Record<string, unknown>;
      const expected = model(text);
      assert.equal(minorAmountFault(body, 'amountMinor'), expected.fault, text);
      if (expected.value !== null) assert.equal(toWire(parseMinor(body.amountMinor)!), expected.value.toString());
    }),
    { numRuns: 1000 },
  );
  t.pass();
});

test('storage refuses what a double cannot hold exactly', (t) => {
  t.is(toStored(MAX), Number.MAX_SAFE_INTEGER);
  t.throws(() => toStored(MAX + 1n), { instanceOf: RangeError });
  t.throws(() => toStored(-MAX - 1n), { instanceOf: RangeError });
});
