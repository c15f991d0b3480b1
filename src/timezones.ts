// A time zone is stored in one spelling, so that two spellings of one zone are one configuration
// (docs/operate/manifests.md, docs/reference/decisions.md).

/**
 * ICU's ids that IANA has renamed since: ICU keeps the old name as its canonical id (CLDR's stability),
 * while IANA's is the one people write and the one stored. Those of tzdata 2025b; a later ICU that
 * answers the new name needs no entry.
 */
const RENAMED: Record<string, string> = {
  'America/Buenos_Aires': 'America/Argentina/Buenos_Aires',
  'America/Catamarca': 'America/Argentina/Catamarca',
  'America/Cordoba': 'America/Argentina/Cordoba',
  'America/Godthab': 'America/Nuuk',
  'America/Indianapolis': 'America/Indiana/Indianapolis',
  'America/Jujuy': 'America/Argentina/Jujuy',
  'America/Louisville': 'America/Kentucky/Louisville',
  'America/Mendoza': 'America/Argentina/Mendoza',
  'Asia/Calcutta': 'Asia/Kolkata',
  'Asia/Katmandu': 'Asia/Kathmandu',
  'Asia/Rangoon': 'Asia/Yangon',
  'Asia/Saigon': 'Asia/Ho_Chi_Minh',
  'Atlantic/Faeroe': 'Atlantic/Faroe',
  'Europe/Kiev': 'Europe/Kyiv',
  'Pacific/Enderbury': 'Pacific/Kanton',
};

/**
 * The canonical IANA name of a zone as written in any case or under any of its names ('america/new_york',
 * 'US/Eastern' -> 'America/New_York'); null when it is no IANA zone (a fixed offset such as '+01:00',
 * which Intl accepts, is none).
 */
export function canonicalZone(name: string): string | null {
  let id: string;
  try {
    id = new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
  if (/^[+-]/.test(id)) return null;
  return RENAMED[id] ?? id;
}
