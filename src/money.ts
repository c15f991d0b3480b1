// Money is exact: integers of minor units. BigInt in arithmetic, decimal strings on the wire,
// plain integers (at most 2^53-1) in storage so analysts can $sum them (docs/internals/design.md §2).
import { writtenAsInteger } from './json.ts';

export const MAX_STORED_MINOR = BigInt(Number.MAX_SAFE_INTEGER);
const MINOR_PATTERN = /^-?\d+$/;

/**
 * Parses a wire MinorAmount (decimal string or JSON integer). Returns null when not a whole number. An
 * integer past 2^53-1 arrives rounded but is whole all the same: callers refuse it as too large, as they
 * do the same digits in a string (docs/reference/decisions.md, amount range).
 */
export function parseMinor(value: unknown): bigint | null {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number') return Number.isInteger(value) ? BigInt(value) : null;
  // Any length: the body's size bounds it (64 KB of digits parse in a few milliseconds).
  if (typeof value === 'string' && MINOR_PATTERN.test(value)) return BigInt(value);
  return null;
}

/**
 * What is wrong with holder[key] as an amount of minor units (a purchase's, a limit's), as parsed by
 * src/json.ts, in the order it is judged: not written as a whole number (1e3 and 100.0 are not, whatever
 * their value), not above zero, beyond what storage keeps exactly; null when nothing is.
 */
export function minorAmountFault(holder: Record<string, unknown>, key: string): 'AMOUNT_NOT_INTEGER' | 'AMOUNT_NOT_POSITIVE' | 'AMOUNT_TOO_LARGE' | null {
  const amount = writtenAsInteger(holder, key) ? parseMinor(holder[key]) : null;
  if (amount === null) return 'AMOUNT_NOT_INTEGER';
  if (amount <= 0n) return 'AMOUNT_NOT_POSITIVE';
  if (amount > MAX_STORED_MINOR) return 'AMOUNT_TOO_LARGE';
  return null;
}

export const toWire = (amount: bigint | number): string => amount.toString();

/** For storage: refuses anything a double cannot hold exactly. */
export function toStored(amount: bigint): number {
  if (amount > MAX_STORED_MINOR || amount < -MAX_STORED_MINOR) {
    throw new RangeError(`amount ${amount} exceeds the storable range`);
  }
  return Number(amount);
}

export const fromStored = (amount: number | bigint | undefined | null): bigint =>
  amount === undefined || amount === null ? 0n : BigInt(amount);
