// The first half of the merchant key (merchant-key.ts): everything before the confusable skeleton's
// table lookup. Kept apart so scripts/generate-confusables.ts builds the table through the very same
// steps the key takes at run time, and the table's prototypes are stable under them.

/**
 * Invisible code points: Default_Ignorable_Code_Point (zero-width spaces and joiners, variation
 * selectors, the combining grapheme joiner, Hangul fillers, U+180E) plus every format character (\p{Cf}:
 * soft hyphens, bidi marks, and the few Cf characters that are not default-ignorable, removed as before).
 */
export const IGNORABLE = /[\p{Default_Ignorable_Code_Point}\p{Cf}]/gu;
const FINAL_SIGMA = /ς/g;
/**
 * A combining dot above right after a Soft_Dotted letter (i, j, і, ...): drawn in place of the letter's own
 * dot, so 'i\u0307' looks like 'i'; it is also what case folding makes of 'İ', the Turkish capital of 'i'.
 */
const DOT_ON_SOFT_DOTTED = /(\p{Soft_Dotted})\u0307/gu;

/**
 * NFKC ('𝐒' and 'Ｓ' -> 'S'); case folding (lower-upper-lower approximates Unicode full case folding:
 * 'ẞ' and 'ß' -> 'ss', 'σ' and 'ς' alike); NFKC again; default-ignorable and format characters removed;
 * NFD, the form the confusables table is keyed on (UTS #39 section 4, skeleton step 1); a dot above that
 * an i or j draws as its own dot removed ('İ', 'i\u0307' -> 'i').
 */
export function foldForSkeleton(label: string): string {
  // Invisible characters go first too: lower-casing is context-sensitive ('Σ' before a letter is 'σ',
  // at a word's end 'ς'), and an invisible character must not make a sigma final. Full case folding
  // maps 'ς' to 'σ'; lower-upper-lower does not.
  return label.normalize('NFKC').replace(IGNORABLE, '').toLowerCase().toUpperCase().toLowerCase().replace(FINAL_SIGMA, 'σ').normalize('NFKC').replace(IGNORABLE, '').normalize('NFD').replace(DOT_ON_SOFT_DOTTED, '$1');
}
