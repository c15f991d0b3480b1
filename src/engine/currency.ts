// ISO 4217 codes and their minor-unit exponents come from ISO 4217 List One itself (iso-4217.ts,
// generated), not from Intl/CLDR, which differs for HUF, IDR, COP (ISO: 2) and IQD (ISO: 3).
import { ISO_4217_MINOR_UNITS } from './iso-4217.ts';

const hasOwn = (code: string) => Object.prototype.hasOwnProperty.call(ISO_4217_MINOR_UNITS, code);

/** Whether code is an active ISO 4217 alpha-3 code with a minor unit. */
export function isIsoCurrency(code: unknown): code is string {
  return typeof code === 'string' && /^[A-Z]{3}$/.test(code) && hasOwn(code);
}

/** Number of minor-unit digits (EUR 2, JPY 0, BHD 3, CLF 4). Throws RangeError for anything else. */
export function currencyExponent(code: string): number {
  if (!isIsoCurrency(code)) throw new RangeError(`not an ISO 4217 currency code: ${code}`);
  return ISO_4217_MINOR_UNITS[code];
}

const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * The decimal digits of a non-negative amount. Below 2^53 a Number holds the integer exactly and
 * prints it in half the time of BigInt#toString (a decision prints one amount per budget window);
 * nothing is computed with it.
 */
const digitsOf = (amount: bigint): string => (amount <= SAFE ? String(Number(amount)) : amount.toString());

/** Exact major-unit digits of a minor amount: formatMajor(-5n, 2) === '-0.05'. No grouping, no floats. */
export function formatMajor(amount: bigint, exponent: number): string {
  const negative = amount < 0n;
  const digits = digitsOf(negative ? -amount : amount);
  if (exponent <= 0) return negative ? `-${digits}` : digits;
  const padded = digits.length > exponent ? digits : digits.padStart(exponent + 1, '0');
  const cut = padded.length - exponent;
  return `${negative ? '-' : ''}${padded.slice(0, cut)}.${padded.slice(cut)}`;
}

/** '600.00 EUR', '1500 JPY': the amount in major units followed by the code. */
export function formatMinor(amount: bigint, currency: string): string {
  return `${formatMajor(amount, currencyExponent(currency))} ${currency}`;
}
