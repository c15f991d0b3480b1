// The first half of the merchant key (merchant-key.ts): everything before the confusable skeleton's
// table lookup. Kept apart so scripts/generate-confusables.ts builds the table through the very same
// steps the key takes at run time, and the table's prototypes are stable under them. caseFold is also
// what text searches compare on (the dashboard's merchant filter, the policies list's `search`).

/**
 * Invisible code points: Default_Ignorable_Code_Point (zero-width spaces and joiners, variation
 * selectors, the combining grapheme joiner, Hangul fillers, U+180E) plus every format character (\p{Cf}:
 * soft hyphens, bidi marks, and the few Cf characters that are not default-ignorable, removed as before).
 */
export const IGNORABLE = /[\p{Default_Ignorable_Code_Point}\p{Cf}]/gu;
const FINAL_SIGMA = /ς/g;
// A dot above on a letter that has its own dot ('i', 'j', 'į', 'ị'...: Unicode's Soft_Dotted) is that
// same dot: 'İ' lower-cases to 'i' + U+0307, which looks like 'i', so it folds to 'i' (docs/reference/decisions.md).
const DOT_ON_DOTTED = /(?<=\p{Soft_Dotted})\u0307/gu;

/**
 * NFKC ('𝐒' and 'Ｓ' -> 'S'); case folding (lower-upper-lower approximates Unicode full case folding:
 * 'ẞ' and 'ß' -> 'ss', 'σ' and 'ς' alike; the Turkic 'İ' and 'ı' -> 'i'); NFKC again; default-ignorable
 * and format characters removed. The result is NFC unless removing an invisible joined two parts.
 */
export function caseFold(text: string): string {
  // Invisible characters go first too: lower-casing is context-sensitive ('Σ' before a letter is 'σ',
  // at a word's end 'ς'), and an invisible character must not make a sigma final. Full case folding
  // maps 'ς' to 'σ'; lower-upper-lower does not.
  return text.normalize('NFKC').replace(IGNORABLE, '').toLowerCase().toUpperCase().toLowerCase().replace(FINAL_SIGMA, 'σ').normalize('NFKC').replace(IGNORABLE, '').replace(DOT_ON_DOTTED, '');
}

/** caseFold, then NFD: the form the confusables table is keyed on (UTS #39 section 4, skeleton step 1). */
export function foldForSkeleton(label: string): string {
  return caseFold(label).normalize('NFD');
}
