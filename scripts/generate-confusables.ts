// Writes src/engine/confusables.ts, the table merchantKey (src/engine/merchant-key.ts) maps each code
// point through to build a UTS #39 confusable skeleton: `npm run confusables`.
//
// Source: Unicode's confusables.txt (Unicode Security Mechanisms, UTS #39), as the `unhomoglyph`
// package ships it (data.json: one source character -> its prototype string, every line of the file).
// This machine reaches no Unicode server; the package is the nodeca project's copy of the file and is
// used by nothing but this script.
//
// The raw table is case-sensitive and the merchant key is not (docs/reference/contract.md §2.6: case
// differences match), so the table written here is the raw one closed under the key's own folding:
//   1. T(c): fold c as the key does (merchant-fold.ts), map each code point through the raw table, and
//      repeat until nothing changes ('0' -> 'O' -> 'o'; 'Ѕ' -> 'ѕ' -> 's'; 'm' -> 'rn').
//   2. An upper-case letter can look like a different letter than its lower case does: 'I' is
//      confusable with 'l' (UTS #39 maps it there) but folds to 'i'. For each ASCII capital whose
//      skeleton-then-fold and fold-then-skeleton are two different letters, the two are merged into one
//      class written as one representative, so 'Shady Goods Itd' gets the key 'Shady Goods ltd' and
//      'SHADY GOODS LTD' get. Of A-Z only 'I' does this: 'i' and 'l' become one letter in keys. The
//      merge is kept to ASCII capitals on purpose: over every cased letter of every script the classes
//      chain (Cherokee, Canadian syllabics, Coptic capitals...) until unrelated Latin letters such as
//      'o' and 'c' meet, which would block merchants nobody listed.
// Every value written is a fixed point: merchantKey of a key is the key.
import { readFileSync, writeFileSync } from 'node:fs';
import { foldForSkeleton } from '../src/engine/merchant-fold.ts';

const packageJson = JSON.parse(readFileSync(new URL('../node_modules/unhomoglyph/package.json', import.meta.url), 'utf8')) as { version: string };
const raw = new Map<string, string>(Object.entries(JSON.parse(readFileSync(new URL('../node_modules/unhomoglyph/data.json', import.meta.url), 'utf8')) as Record<string, string>));
/** The confusables.txt version the package's README names. */
const dataVersion = /confusables\.txt\), v([\d.]+)/.exec(readFileSync(new URL('../node_modules/unhomoglyph/README.md', import.meta.url), 'utf8'))?.[1].replace(/\.$/, '') ?? 'unknown';

const fold = (s: string) => s.toLowerCase().toUpperCase().toLowerCase();
const mapRaw = (s: string) => Array.from(s, (c) => raw.get(c) ?? c).join('').normalize('NFD');

function fixpoint(s: string, step: (s: string) => string): string {
  for (let i = 0; i < 20; i++) {
    const next = step(s);
    if (next === s) return s;
    s = next;
  }
  throw new Error(`no fixed point for ${JSON.stringify(s)}`);
}

/** Fold, then skeleton, repeated: what the key does with the raw table. */
export const foldThenSkeleton = (s: string) => fixpoint(s, (x) => mapRaw(foldForSkeleton(x)));
/** Skeleton of the character as written (its case kept), then the same. */
const skeletonThenFold = (s: string) => foldThenSkeleton(fold(mapRaw(s.normalize('NFD'))));

export function buildTable(): Map<string, string> {
  const chars = new Set<string>();
  for (const [source, target] of raw) {
    chars.add(source);
    for (const c of target) chars.add(c);
  }
  const letter = (s: string) => [...s].length === 1 && /^\p{L}$/u.test(s);

  // Union-find over single code points that one character's two readings tie together.
  const parent = new Map<string, string>();
  const find = (c: string): string => {
    let p = parent.get(c) ?? c;
    if (p !== c) {
      p = find(p);
      parent.set(c, p);
    }
    return p;
  };
  for (const c of chars) {
    if (!/^[A-Z]$/.test(c)) continue; // see step 2 above
    const a = foldThenSkeleton(c);
    const b = skeletonThenFold(c);
    if (a !== b && letter(a) && letter(b)) parent.set(find(a), find(b));
  }
  // A class is written as the member most characters map to (ties: the lowest code point).
  const weight = new Map<string, number>();
  for (const c of chars) {
    const t = foldThenSkeleton(c);
    weight.set(t, (weight.get(t) ?? 0) + 1);
  }
  const members = new Map<string, string[]>();
  for (const c of parent.keys()) {
    const root = find(c);
    members.set(root, [...(members.get(root) ?? [root]), c].filter((x, i, all) => all.indexOf(x) === i));
  }
  const representative = new Map<string, string>();
  for (const group of members.values()) {
    const best = [...group].sort((x, y) => (weight.get(y) ?? 0) - (weight.get(x) ?? 0) || x.codePointAt(0)! - y.codePointAt(0)!)[0];
    for (const c of group) representative.set(c, best);
  }
  const rep = (s: string) => Array.from(s, (c) => representative.get(c) ?? c).join('');

  const table = new Map<string, string>();
  for (const c of [...chars, ...representative.keys()]) {
    if (foldForSkeleton(c) !== c) continue; // the key never looks this code point up: it folds it first
    const value = rep(foldThenSkeleton(c));
    if (value !== c) table.set(c, value);
  }
  if (process.env.SHOW_CLASSES) for (const g of members.values()) console.log(g.map((c) => `${c} U+${c.codePointAt(0)!.toString(16)}`).join('  '), '->', representative.get(g[0]));
  return table;
}

const escape = (s: string) => JSON.stringify(s).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

if (import.meta.main) {
  const table = buildTable();
  const rows = [...table].sort(([a], [b]) => a.codePointAt(0)! - b.codePointAt(0)!).map(([c, v]) => `  [${escape(c)}, ${escape(v)}],`);
  writeFileSync(
    new URL('../src/engine/confusables.ts', import.meta.url),
    `// Generated by scripts/generate-confusables.ts from Unicode confusables.txt v${dataVersion} (as shipped by unhomoglyph ${packageJson.version}),\n` +
      `// closed under the merchant key's case folding. Do not edit by hand: run \`npm run confusables\`.\n` +
      `// Code point (NFD, folded) -> its skeleton prototype (UTS #39 section 4), itself a fixed point.\n` +
      `export const CONFUSABLE_PROTOTYPES: ReadonlyMap<string, string> = new Map([\n${rows.join('\n')}\n]);\n`,
  );
  process.stdout.write(`${table.size} code points written to src/engine/confusables.ts (confusables.txt v${dataVersion})\n`);
}
