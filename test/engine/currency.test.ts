import test from 'ava';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { currencyExponent, formatMajor, formatMinor, isIsoCurrency } from '../../src/engine/currency.ts';
import { ISO_4217_MINOR_UNITS } from '../../src/engine/iso-4217.ts';
import { listOne } from '../../scripts/generate-iso-4217.ts';

test('isIsoCurrency accepts ISO 4217 codes only', (t) => {
  for (const code of ['EUR', 'USD', 'JPY', 'BHD', 'GBP', 'CHF']) t.true(isIsoCurrency(code), code);
  for (const code of ['eur', 'EURO', 'XYZ', 'E1R', '', null, 978]) t.false(isIsoCurrency(code), String(code));
});

test('currencyExponent is ISO 4217, not Intl/CLDR (HUF, IDR, COP have 2 digits, IQD 3)', (t) => {
  t.is(currencyExponent('EUR'), 2);
  t.is(currencyExponent('JPY'), 0);
  t.is(currencyExponent('BHD'), 3);
  t.is(currencyExponent('KWD'), 3);
  t.is(currencyExponent('HUF'), 2);
  t.is(currencyExponent('IDR'), 2);
  t.is(currencyExponent('COP'), 2);
  t.is(currencyExponent('IQD'), 3);
  t.is(currencyExponent('CLF'), 4);
  t.throws(() => currencyExponent('euro'), { instanceOf: RangeError });
  t.throws(() => currencyExponent('XAU'), { instanceOf: RangeError });
});

test('messages format with the ISO exponent', (t) => {
  t.is(formatMinor(123_456n, 'HUF'), '1234.56 HUF');
  t.is(formatMinor(1_000n, 'IQD'), '1.000 IQD');
});

test('the table is every code of ISO 4217 List One that has a minor unit, with its digits', (t) => {
  const xml = readFileSync(new URL('../../node_modules/currency-codes/iso-4217-list-one.xml', import.meta.url), 'utf8');
  const listed = listOne(xml);
  t.true(listed.size > 150);
  for (const [code, digits] of listed) t.is(ISO_4217_MINOR_UNITS[code], digits, code);
  // Codes without a minor unit (gold, SDR, the test and "no currency" codes) are not currencies to spend in.
  for (const code of ['XAU', 'XAG', 'XDR', 'XTS', 'XXX', 'XBA']) t.false(isIsoCurrency(code), code);
  // Withdrawn codes Intl still knows are refused.
  for (const code of ['DEM', 'FRF', 'ZWL', 'SLL']) t.false(isIsoCurrency(code), code);
  for (const code of Object.keys(ISO_4217_MINOR_UNITS)) t.true(listed.has(code) || code === 'XCG', `${code} is in List One or a listed amendment`);
});

test('formatMinor is exact', (t) => {
  t.is(formatMinor(60_000n, 'EUR'), '600.00 EUR');
  t.is(formatMinor(5n, 'EUR'), '0.05 EUR');
  t.is(formatMinor(-5n, 'EUR'), '-0.05 EUR');
  t.is(formatMinor(0n, 'EUR'), '0.00 EUR');
  t.is(formatMinor(1_500n, 'JPY'), '1500 JPY');
  t.is(formatMinor(1_234n, 'BHD'), '1.234 BHD');
  t.is(formatMinor(123_456_789_012_345_678_901n, 'EUR'), '1234567890123456789.01 EUR');
  // Either side of 2^53, where the digits stop coming from an exact Number.
  t.is(formatMinor(9_007_199_254_740_991n, 'EUR'), '90071992547409.91 EUR');
  t.is(formatMinor(9_007_199_254_740_992n, 'EUR'), '90071992547409.92 EUR');
  t.is(formatMinor(9_007_199_254_740_993n, 'EUR'), '90071992547409.93 EUR');
  t.is(formatMinor(-9_007_199_254_740_993n, 'JPY'), '-9007199254740993 JPY');
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

test('property: formatMajor is exact around 2^53, where its digits change method', (t) => {
  const edge = 2n ** 53n;
  fc.assert(
    fc.property(fc.bigInt({ min: -edge - 1000n, max: edge + 1000n }), fc.integer({ min: -1000, max: 1000 }), fc.integer({ min: 0, max: 4 }), (base, nudge, exponent) => {
      const amount = (base % 2n === 0n ? base : base > 0n ? edge : -edge) + BigInt(nudge);
      const text = formatMajor(amount, exponent);
      return BigInt(text.replace('.', '')) === amount && (exponent === 0 || text.split('.')[1].length === exponent);
    }),
    { numRuns: 1000 },
  );
  t.pass();
});
