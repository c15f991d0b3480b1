import test from 'ava';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { merchantKey } from '../../src/engine/merchant-key.ts';

const cases: Array<[string, string]> = [
  // Keys are confusable skeletons (UTS #39): for comparing, not for reading ('m' -> 'rn', 'i' -> 'l').
  ['Paper Co', 'paper co'],
  ['Acme Supplies', 'acrne supplles'],
  ['  ACME   Supplies  ', 'acrne supplles'],
  ['Acme-Supplies, Ltd.', 'acrne supplles ltd'],
  ['O\'Reilly Media', 'o rellly rnedla'],
  ['Shady\tGoods\nLtd', 'shady goods ltd'],
  ['ＡＣＭＥ　Ｓｕｐｐｌｉｅｓ', 'acrne supplles'], // full-width letters and ideographic space (NFKC)
  ['Straße', 'strasse'],
  ['STRAẞE', 'strasse'],
  ['ΟΔΟΣ', merchantKey('οδοσ')], // sigma and final sigma are the same letter
  ['Pr\u03C3\u{E0079}to', 'proto'], // an invisible tag after a sigma does not make it final (fast-check found it)
  ['Ama\u200Bzon', 'arnazon'], // zero-width space is invisible, not a separator
  ['Café', 'café'],
  ['Cafe\u0301', 'café'], // decomposed accent composes
  ['...', ''],
  // Invisible characters and look-alike letters a blocked merchant could hide behind.
  ['Sha\u034Fdy Goods Ltd', 'shady goods ltd'], // combining grapheme joiner
  ['Shady\uFE0F Goods Ltd', 'shady goods ltd'], // variation selector 16
  ['Shady Goo\u3164ds Ltd', 'shady goods ltd'], // Hangul filler
  ['Shady Goods L\u180Etd', 'shady goods ltd'], // Mongolian vowel separator
  ['\u0405hady Goods Ltd', 'shady goods ltd'], // Cyrillic capital DZE
  ['\u0455hady Goods Ltd', 'shady goods ltd'], // Cyrillic small dze
  ['Shady G\u043E\u043Eds Ltd', 'shady goods ltd'], // Cyrillic o
  ['Shady G\u03BF\u039Fds Ltd', 'shady goods ltd'], // Greek omicron, small and capital
  ['\u{1D412}hady Goods Ltd', 'shady goods ltd'], // mathematical bold S
  ['Shady G00ds Ltd', 'shady goods ltd'], // digit zero
  ['Shady Goods Itd', 'shady goods ltd'], // capital I for small l
  ['Shade Goods Ltd', 'shade goods ltd'], // a different name stays different
  ['Spi\u0307ce', 'splce'], // a dot above an i is drawn as the i's own dot
  ['SP\u0130CE', 'splce'], // the Turkish capital of i case-folds to i + U+0307
  ['j\u0307am', 'jarn'],
  ['Spi\u0308ce', 'spl\u0308ce'], // a diaeresis shows: another name
  ['Shady\u2800Goods', 'shady goods'], // the braille blank is drawn as a space
  ['\u2800\u2800', ''],
  // The Turkic i's: 'İ' lower-cases to 'i' + U+0307, which is drawn as 'i'; dotless 'ı' upper-cases to 'I'.
  ['İstanbul Shop', merchantKey('Istanbul Shop')],
  ['ıstanbul shop', merchantKey('Istanbul Shop')],
  ['i\u0307stanbul shop', merchantKey('Istanbul Shop')],
  ['ISTANBUL SHOP', merchantKey('İstanbul Shop')],
  ['Cafe\u0307', 'cafė'], // a dot above on a letter without its own dot is an accent, and accents count
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

test('the invisible and look-alike characters of a disguised merchant are gone or mapped, and a different name stays different', (t) => {
  const blocked = merchantKey('Shady Goods Ltd');
  for (const disguise of ['Sha\u034Fdy', 'Sha\uFE0Fdy', 'Sha\u3164dy', 'Sha\u180Edy', '\u0405hady', 'Shad\u0443', '\u{1D412}hady']) {
    t.is(merchantKey(`${disguise} Goods Ltd`), blocked, disguise);
  }
  t.not(merchantKey('Shade Goods Ltd'), blocked);
});

// Unicode's confusables.txt as the generator read it: source character -> prototype.
const RAW = Object.entries(JSON.parse(readFileSync(new URL('../../node_modules/unhomoglyph/data.json', import.meta.url), 'utf8')) as Record<string, string>);
const fold = (s: string) => s.toLowerCase().toUpperCase().toLowerCase();
/**
 * Sources the key can honour: those case folding leaves alone or that are ASCII. A capital of another
 * script whose small letter looks different ('Κ' is 'K' but 'κ' is 'ĸ'; Cyrillic 'Н' is 'H' but 'н' is
 * 'ʜ') folds away from its look-alike: a known gap of a case-insensitive key (src/engine/README.md).
 * Letters and digits only: punctuation and spacing collapse to one space whatever they look like. And
 * none that NFKC changes: NFKC comes first and decides those ('ſ' is 's' to it, 'f' to confusables.txt).
 */
const honoured = (source: string) => source.normalize('NFKC') === source && /^[\p{L}\p{N}]$/u.test(source) && (fold(source.normalize('NFKC')) === source.normalize('NFKC') || /^[\x00-\x7f]$/.test(source));
/** Every source whose prototype is this one character, so a name's letter can be swapped for any of them. */
const LOOKALIKES = new Map<string, string[]>();
for (const [source, prototype] of RAW) if (/^[A-Za-z0-9]$/.test(prototype) && honoured(source)) LOOKALIKES.set(prototype, [...(LOOKALIKES.get(prototype) ?? []), source]);
const IGNORABLES: string[] = [];
for (let cp = 0; cp <= 0x10ffff; cp++) if (cp < 0xd800 || cp > 0xdfff) if (/\p{Default_Ignorable_Code_Point}/u.test(String.fromCodePoint(cp))) IGNORABLES.push(String.fromCodePoint(cp));

test('the data: every default-ignorable code point and every confusables.txt line was read', (t) => {
  t.true(IGNORABLES.length > 4000, `${IGNORABLES.length} default-ignorable code points`);
  t.true(RAW.length > 6000, `${RAW.length} confusables`);
  for (const c of ['\u034F', '\uFE0F', '\u3164', '\u180E']) t.true(IGNORABLES.includes(c), c);
});

test('property: a name with default-ignorables inserted and letters swapped for their confusables has the same key', (t) => {
  const name = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9 ]{0,24}$/);
  const disguised = name.chain((plain) =>
    fc
      .tuple(
        ...Array.from(plain, (c) =>
          fc.tuple(
            LOOKALIKES.has(c) ? fc.oneof(fc.constant(c), fc.constantFrom(...LOOKALIKES.get(c)!)) : fc.constant(c),
            fc.oneof({ weight: 3, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom(...IGNORABLES) }),
          ),
        ),
      )
      .map((parts) => ({ plain, disguise: parts.map(([c, invisible]) => c + invisible).join('') })),
  );
  fc.assert(
    fc.property(disguised, ({ plain, disguise }) => merchantKey(disguise) === merchantKey(plain)),
    { numRuns: 2000 },
  );
  t.pass();
});

test('property: every character the confusables table maps looks up to the key of its prototype', (t) => {
  let checked = 0;
  for (const [source, prototype] of RAW) {
    if (!honoured(source) || !/^[A-Za-z0-9]+$/.test(prototype)) continue;
    checked++;
    if (merchantKey(`a${source}a`) !== merchantKey(`a${prototype}a`)) t.fail(`${source} U+${source.codePointAt(0)!.toString(16)} -> ${prototype}: ${merchantKey(`a${source}a`)} vs ${merchantKey(`a${prototype}a`)}`);
  }
  // Not vacuous: a filter that let nothing through would pass any key.
  t.true(checked > 250, `${checked} characters checked`);
});

// Letters a name is drawn from: ASCII, some with accents (accents count: 'Café' is not 'Cafe'), and the Turkic i's.
const LETTERS = [...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789', 'é', 'ü', 'ñ', 'ß', 'ø', 'İ', 'ı'];
/** Ways to write a letter that must not change the key: case, full width, its confusables, and the Turkic i's for i. */
function variants(c: string): string[] {
  const out = [c, c.toLowerCase(), c.toUpperCase(), ...(LOOKALIKES.get(c) ?? []), ...(LOOKALIKES.get(c.toLowerCase()) ?? [])];
  if (/^[A-Za-z0-9]$/.test(c)) out.push(String.fromCodePoint(c.codePointAt(0)! + 0xfee0)); // full width
  if ('iIİı'.includes(c)) out.push('i', 'I', 'İ', 'ı', 'i\u0307');
  return out;
}
const nameOf = (letters: string[]) => letters.join('');
const letters = fc.array(fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...LETTERS) }, { weight: 1, arbitrary: fc.constant(' ') }), { minLength: 1, maxLength: 20 });

test('property: case, width, look-alike and Turkic-i variants of a name have its key', (t) => {
  const pair = letters.chain((plain) => fc.tuple(...plain.map((c) => fc.constantFrom(...variants(c)))).map((parts) => ({ plain: nameOf(plain), variant: parts.join('') })));
  fc.assert(
    fc.property(pair, ({ plain, variant }) => merchantKey(variant) === merchantKey(plain)),
    { numRuns: 2000 },
  );
  t.pass();
});

test('property: names that differ in one letter, not a look-alike of it, have different keys', (t) => {
  const pair = letters.chain((plain) =>
    fc.tuple(fc.nat(plain.length - 1), fc.constantFrom(...LETTERS)).map(([at, other]) => ({ plain, at, other })),
  ).filter(({ plain, at, other }) => plain[at] !== ' ' && merchantKey(plain[at]) !== merchantKey(other));
  fc.assert(
    fc.property(pair, ({ plain, at, other }) => merchantKey(nameOf(plain)) !== merchantKey(nameOf(plain.with(at, other)))),
    { numRuns: 2000 },
  );
  t.pass();
});
