// The normalised merchant name the engine matches merchant lists on (docs/reference/contract.md §2.6: "case differences
// match"; domains are never matched). Both the list entries and the purchase go through this function.

const INVISIBLE = /\p{Cf}/gu; // zero-width spaces and joiners, soft hyphens, bidi marks
const SEPARATORS = /[\p{P}\p{Z}\p{Cc}\s]+/gu; // punctuation, spaces, line breaks, control characters

/**
 * NFKC, then case folding (lower-upper-lower approximates Unicode full case folding: 'ẞ' and 'ß' -> 'ss',
 * 'σ' and 'ς' alike), NFKC again, invisible format characters removed, runs of punctuation and
 * whitespace collapsed to one space, trimmed. 'ACME  Corp.' and 'acme-corp' both become 'acme corp'.
 */
export function merchantKey(label: string): string {
  return label
    .normalize('NFKC')
    .toLowerCase()
    .toUpperCase()
    .toLowerCase()
    .normalize('NFKC')
    .replace(INVISIBLE, '')
    .replace(SEPARATORS, ' ')
    .trim();
}
