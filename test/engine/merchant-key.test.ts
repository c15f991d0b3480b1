import test from 'ava';
import fc from 'fast-check';
import { merchantKey } from '../../src/engine/merchant-key.ts';

const cases: Array<[string, string]> = [
  ['Acme Supplies', 'acme supplies'],
  ['  ACME   Supplies  ', 'acme supplies'],
  ['Acme-Supplies, Ltd.', 'acme supplies ltd'],
  ['O\'Reilly Media', 'o reilly media'],
  ['Shady\tGoods\nLtd', 'shady goods ltd'],
  ['ＡＣＭＥ　Ｓｕｐｐｌｉｅｓ', 'acme supplies'], // full-width letters and ideographic space (NFKC)
  ['Straße', 'strasse'],
  ['STRAẞE', 'strasse'],
  ['ΟΔΟΣ', 'οδος'],
  ['οδοσ', 'οδος'], // sigma and final sigma are the same letter
  ['Ama\u200Bzon', 'amazon'], // zero-width space is invisible, not a separator
  ['Café', 'café'],
  ['Cafe\u0301', 'café'], // decomposed accent composes
  ['...', ''],
];

for (const [label, key] of cases) {
  test(`merchantKey(${JSON.stringify(label)})`, (t) => {
    t.is(merchantKey(label), key);
  });
}

test('property: merchantKey is idempotent, trimmed, and has no double spaces', (t) => {
  fc.assert(
    fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }), (label) => {
      const key = merchantKey(label);
      return merchantKey(key) === key && key === key.trim() && !key.includes('  ');
    }),
    { numRuns: 500 },
  );
  t.pass();
});

test('property: case differences match', (t) => {
  fc.assert(
    fc.property(fc.string({ unit: 'grapheme-ascii', maxLength: 40 }), (label) => merchantKey(label.toUpperCase()) === merchantKey(label.toLowerCase())),
    { numRuns: 300 },
  );
  t.pass();
});
