// application/x-www-form-urlencoded bodies of the token, revocation, sign-in and consent endpoints
// (and the capped raw body the registration endpoint reads as JSON).
// RFC 6749 3.1/3.2: parameters sent more than once are an error, and parameters without a value are
// treated as omitted.
import type { Context } from 'koa';

export const FORM_LIMIT_BYTES = 16 * 1024;

export type FormResult =
  | { ok: true; get(name: string): string | undefined; names: string[] }
  | { ok: false; problem: 'media_type' | 'too_large' | 'duplicate'; detail: string };

export function parseForm(text: string): FormResult {
  const params = new URLSearchParams(text);
  const values = new Map<string, string>();
  for (const [name, value] of params) {
    if (values.has(name)) return { ok: false, problem: 'duplicate', detail: `parameter ${name} is sent more than once` };
    values.set(name, value);
  }
  return { ok: true, get: (name) => (values.get(name) === '' ? undefined : values.get(name)), names: [...values.keys()] };
}

/** The raw body, up to `limit` bytes (checked against Content-Length first, then while reading). */
export async function readBody(ctx: Context, limit: number): Promise<{ ok: true; text: string } | { ok: false; detail: string }> {
  const tooLarge = { ok: false, detail: `the body is larger than ${limit} bytes` } as const;
  if (Number(ctx.get('content-length') || '0') > limit) return tooLarge;
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of ctx.req) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
    total += buf.length;
    if (total > limit) return tooLarge;
    chunks.push(buf);
  }
  return { ok: true, text: Buffer.concat(chunks).toString('utf8') };
}

export async function readForm(ctx: Context, limit = FORM_LIMIT_BYTES): Promise<FormResult> {
  if (ctx.request.type !== 'application/x-www-form-urlencoded') {
    return { ok: false, problem: 'media_type', detail: 'send the parameters as application/x-www-form-urlencoded' };
  }
  const body = await readBody(ctx, limit);
  if (!body.ok) return { ok: false, problem: 'too_large', detail: body.detail };
  return parseForm(body.text);
}

/** Query parameters the same way: a repeated parameter is an error, an empty one is absent. */
export function queryParams(ctx: Context): FormResult {
  return parseForm(ctx.querystring);
}
