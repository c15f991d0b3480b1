// The normalised merchant name the engine matches merchant lists on (docs/reference/contract.md §2.6:
// "case differences match"; domains are never matched). Both the list entries and the purchase go
// through this function, so a blocked name written with look-alike letters or invisible characters
// still meets its list entry.
import { CONFUSABLE_PROTOTYPES } from './confusables.ts';
import { foldForSkeleton } from './merchant-fold.ts';

// Punctuation, spaces, line breaks, control characters, and U+2800 BRAILLE PATTERN BLANK: a symbol, not
// a space, but drawn as one, so 'Shady\u2800Goods' looks like 'Shady Goods'.
const SEPARATORS = /[\p{P}\p{Z}\p{Cc}\s\u2800]+/gu;

/**
 * A case-insensitive UTS #39 confusable skeleton, with punctuation and spacing collapsed:
 * 1. NFKC, case folding (lower-upper-lower approximates full case folding: 'ẞ' and 'ß' -> 'ss', 'σ' and
 *    'ς' alike), NFKC again, default-ignorable and format characters removed, a dot above that an i or j
 *    draws as its own dot removed ('İ', 'i\u0307' -> 'i') (merchant-fold.ts);
 * 2. the skeleton: NFD, each code point mapped to its confusables prototype (confusables.ts: Cyrillic
 *    'ѕ', Greek 'ο', '0' -> 's', 'o', 'o'; 'm' -> 'rn'; 'I', 'i', '1' -> 'l'), normalised again;
 * 3. runs of punctuation and whitespace (and the braille blank) collapsed to one space, trimmed, NFC.
 * The key is for comparing, not for reading: 'ACME  Corp.' and 'acme-corp' both become 'acrne corp'.
 */
export function merchantKey(label: string): string {
  let skeleton = '';
  for (const c of foldForSkeleton(label)) skeleton += CONFUSABLE_PROTOTYPES.get(c) ?? c;
  return skeleton.replace(SEPARATORS, ' ').trim().normalize('NFC');
}
