// Path and query parameter helpers. A malformed id is the same 404 as an unknown one (SPEC.md 7).
import type { Context } from 'koa';
import { isUuid } from '../ids.ts';
import { notFound } from './errors.ts';

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
