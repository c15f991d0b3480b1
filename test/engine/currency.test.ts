import test from 'ava';
import fc from 'fast-check';
import { currencyExponent, formatMajor, formatMinor, isIsoCurrency } from '../../src/engine/currency.ts';

test('isIsoCurrency accepts ISO 4217 codes only', (t) => {
  for (const code of ['EUR', 'USD', 'JPY', 'BHD', 'GBP', 'CHF']) t.true(isIsoCurrency(code), code);
  for (const code of ['eur', 'EURO', 'XYZ', 'E1R', '', null, 978]) t.false(isIsoCurrency(code), String(code));
});

test('currencyExponent comes from Intl', (t) => {
  t.is(currencyExponent('EUR'), 2);
  t.is(currencyExponent('JPY'), 0);
  t.is(currencyExponent('BHD'), 3);
  t.is(currencyExponent('KWD'), 3);
  t.throws(() => currencyExponent('euro'), { instanceOf: RangeError });
});

test('formatMinor is exact', (t) => {
  t.is(formatMinor(60_000n, 'EUR'), '600.00 EUR');
  t.is(formatMinor(5n, 'EUR'), '0.05 EUR');
  t.is(formatMinor(-5n, 'EUR'), '-0.05 EUR');
  t.is(formatMinor(0n, 'EUR'), '0.00 EUR');
  t.is(formatMinor(1_500n, 'JPY'), '1500 JPY');
  t.is(formatMinor(1_234n, 'BHD'), '1.234 BHD');
  t.is(formatMinor(123_456_789_012_345_678_901n, 'EUR'), '1234567890123456789.01 EUR');
});

test('property: formatMajor round-trips to the same minor amount', (t) => {
  fc.assert(
    fc.property(fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }), fc.integer({ min: 0, max: 4 }), (amount, exponent) => {
      const text = formatMajor(amount, exponent);
      return BigInt(text.replace('.', '')) === amount && (exponent === 0 || text.split('.')[1].length === exponent);
    }),
    { numRuns: 500 },
  );
  t.pass();
});
