// Path and query parameter helpers. A malformed id is the same 404 as an unknown one (SPEC.md 7).
import type { Context } from 'koa';
import { isUuid } from '../ids.ts';
import type { Next } from 'koa';
import { invalidRequest, notFound } from './errors.ts';

export function uuidParam(ctx: Context, name: string, what: string): string {
  const value = (ctx.params as Record<string, string>)[name];
  if (!isUuid(value)) throw notFound(what);
  return value.toLowerCase();
}

/** Query strings arrive as strings (or arrays when repeated); the first value wins. */
export function queryValue(ctx: Context, name: string): string | undefined {
  const raw = ctx.query[name];
  return Array.isArray(raw) ? raw[0] : raw;
}

/**
 * Route middleware: refuses query parameters the operation does not define (SPEC.md 1 rule 6),
 * one UNKNOWN_FIELD issue each.
 */
export function queryParams(...allowed: string[]) {
  return (ctx: Context, next: Next) => {
    const unknown = Object.keys(ctx.query).filter((name) => !allowed.includes(name));
    if (unknown.length > 0) {
      throw invalidRequest(unknown.slice(0, 100).map((name) => ({ path: name, code: 'UNKNOWN_FIELD', message: `Unknown query parameter "${name}".` })));
    }
    return next();
  };
}
