// HTML for the dashboard: a tagged template that escapes every interpolated value unless it is
// already `Html` (built by this same template), so escaping cannot be forgotten. Plus the amount and
// time formats of the organisation: the currency's own format (exact: the digits come from the
// integer of minor units, Intl only lays them out) and the organisation's time zone.
import { DateTime } from 'luxon';
import { currencyExponent, formatMajor } from '../engine/currency.ts';

export class Html {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  toString(): string {
    return this.text;
  }
}

/**
 * Bidi embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069): an agent's merchant holding
 * U+202E would be drawn backwards ("moc.nozama" read as "amazon.com"), with the rest of its sentence.
 * Dropped, as from client names (src/identity/oauth/client-metadata.ts): the text reads as written.
 */
export const withoutBidiControls = (s: string) => s.replace(/[\u202a-\u202e\u2066-\u2069]/g, '');

export const escapeHtml = (s: string) =>
  withoutBidiControls(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

type Value = Html | string | number | bigint | boolean | null | undefined | Value[];

function render(v: Value): string {
  if (v instanceof Html) return v.text;
  if (Array.isArray(v)) return v.map(render).join('');
  if (v === null || v === undefined || v === false) return '';
  return escapeHtml(String(v));
}

export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new Html(out);
}

const numberFormats = new Map<string, Intl.NumberFormat>();

/** '€1,234.50', '¥1,500', 'BHD 1.250': exact, in the currency's own format. */
export function money(minor: bigint | number | string, currency: string): string {
  const exponent = currencyExponent(currency);
  let format = numberFormats.get(currency);
  if (!format) {
    format = new Intl.NumberFormat('en', { style: 'currency', currency, minimumFractionDigits: exponent, maximumFractionDigits: exponent });
    numberFormats.set(currency, format);
  }
  // A decimal string is formatted exactly (ECMA-402 Intl.NumberFormat v3): no float ever holds the amount.
  return format.format(formatMajor(BigInt(minor), exponent) as `${number}`);
}

/** '12.50' in EUR -> 1250n; null when it is not a whole number of the currency's minor units. */
export function parseMajor(text: string, currency: string): bigint | null {
  const exponent = currencyExponent(currency);
  const match = /^(\d{1,16})(?:\.(\d+))?$/.exec(text.trim());
  if (!match) return null;
  const fraction = match[2] ?? '';
  if (fraction.length > exponent) return null;
  return BigInt(match[1] + fraction.padEnd(exponent, '0'));
}

/** '23 Nov 2026, 14:05 CET' in the organisation's zone. */
export const when = (d: Date | string, zone: string) =>
  DateTime.fromJSDate(typeof d === 'string' ? new Date(d) : d, { zone }).setLocale('en-GB').toFormat('d LLL yyyy, HH:mm ZZZZ');

/** 'in 3 h 20 min', 'in 45 s', 'expired'. */
export function timeLeft(until: Date, now: Date): string {
  const ms = until.getTime() - now.getTime();
  if (ms <= 0) return 'expired';
  const s = Math.ceil(ms / 1000);
  if (s < 60) return `${s} s left`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min left`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${m % 60} min left`;
  return `${Math.floor(h / 24)} days left`;
}
