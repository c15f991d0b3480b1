// ISO 4217 codes and their minor-unit exponents come from the platform's Intl data (DESIGN.md 4 item 8).
// Everything is computed once per currency and cached: decide() runs on every request.

const CODE = /^[A-Z]{3}$/;
let isoCodes: ReadonlySet<string> | undefined;
const exponents = new Map<string, number>();

/** Whether code is an ISO 4217 alpha-3 code the platform knows. */
export function isIsoCurrency(code: unknown): code is string {
  if (typeof code !== 'string' || !CODE.test(code)) return false;
  isoCodes ??= new Set(Intl.supportedValuesOf('currency'));
  return isoCodes.has(code);
}

/** Number of minor-unit digits (EUR 2, JPY 0, BHD 3). Throws RangeError for a malformed code. */
export function currencyExponent(code: string): number {
  let exponent = exponents.get(code);
  if (exponent === undefined) {
    if (!CODE.test(code)) throw new RangeError(`not a currency code: ${code}`);
    exponent = new Intl.NumberFormat('en', { style: 'currency', currency: code }).resolvedOptions().maximumFractionDigits ?? 2;
    exponents.set(code, exponent);
  }
  return exponent;
}

/** Exact major-unit digits of a minor amount: formatMajor(-5n, 2) === '-0.05'. No grouping, no floats. */
export function formatMajor(amount: bigint, exponent: number): string {
  const negative = amount < 0n;
  const digits = (negative ? -amount : amount).toString();
  if (exponent <= 0) return (negative ? '-' : '') + digits;
  const padded = digits.padStart(exponent + 1, '0');
  const cut = padded.length - exponent;
  return `${negative ? '-' : ''}${padded.slice(0, cut)}.${padded.slice(cut)}`;
}

/** '600.00 EUR', '1500 JPY': the amount in major units followed by the code. */
export function formatMinor(amount: bigint, currency: string): string {
  return `${formatMajor(amount, currencyExponent(currency))} ${currency}`;
}
