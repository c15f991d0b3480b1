// Path and query parameter helpers. A malformed id is the same 404 as an unknown one (docs/reference/contract.md §7).
import type { Context } from 'koa';
import { isUuid } from '../ids.ts';
import type { Next } from 'koa';
import { invalidRequest, notFound, type ErrorIssue } from './errors.ts';

export function uuidParam(ctx: Context, name: string, what: string): string {
  const value = (ctx.params as Record<string, string>)[name];
  if (!isUuid(value)) throw notFound(what);
  return value.toLowerCase();
}

/** Query strings arrive as strings (or arrays when repeated; queryParams refuses those on /v1): the first value wins. */
export function queryValue(ctx: Context, name: string): string | undefined {
  const raw = ctx.query[name];
  return Array.isArray(raw) ? raw[0] : raw;
}

/** The first `n` characters (code points, as schemas count a text's length): slicing UTF-16 units could keep half of one. */
export const firstCharacters = (text: string, n: number): string => Array.from(text).slice(0, n).join('');

/**
 * A query value of ASCII digits as a number, leading zeros allowed (`0100` is 100); one beyond 2^53-1 counts
 * as 2^53-1. Anything else (a sign, a fraction, an exponent, nothing) is null.
 */
export function wholeNumber(value: string): number | null {
  if (!/^\d+$/.test(value)) return null;
  const digits = value.replace(/^0+(?=\d)/, '');
  return digits.length > 16 ? Number.MAX_SAFE_INTEGER : Math.min(Number(digits), Number.MAX_SAFE_INTEGER);
}

/**
 * A list's `limit`: the default when absent, else a whole number from min to max; out of range or not a
 * whole number is an OUT_OF_RANGE issue (and the default is returned).
 */
export function limitParam(value: string | undefined, bounds: { min: number; max: number; default: number }, issues: ErrorIssue[]): number {
  if (value === undefined) return bounds.default;
  const n = wholeNumber(value);
  if (n !== null && n >= bounds.min && n <= bounds.max) return n;
  issues.push({ path: 'limit', code: 'OUT_OF_RANGE', message: `limit must be a whole number from ${bounds.min} to ${bounds.max}.` });
  return bounds.default;
}

/**
 * The query's problems for an operation that defines `allowed`: a parameter it does not define (docs/reference/contract.md §1
 * rule 6), UNKNOWN_FIELD, and one given twice (`?limit=1&limit=abc`: which one was meant?), DUPLICATE_KEY,
 * as a JSON body refuses a name given twice.
 */
export function queryIssues(ctx: Context, allowed: readonly string[]): ErrorIssue[] {
  return Object.keys(ctx.query).flatMap((name) =>
    !allowed.includes(name)
      ? [{ path: name, code: 'UNKNOWN_FIELD', message: `Unknown query parameter "${name}".` }]
      : Array.isArray(ctx.query[name])
        ? [{ path: name, code: 'DUPLICATE_KEY', message: `"${name}" is given more than once; give it once.` }]
        : [],
  );
}

/** Route middleware: refuses the query's problems (queryIssues). */
export function queryParams(...allowed: string[]) {
  return (ctx: Context, next: Next) => {
    const issues = queryIssues(ctx, allowed);
    if (issues.length > 0) throw invalidRequest(issues);
    return next();
  };
}
