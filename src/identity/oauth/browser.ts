// Binds an authorization request to the browser that started it, and protects its forms from CSRF.
//
// GET /oauth/authorize sets a random, HttpOnly, SameSite=Lax cookie (15 minutes) and stores its
// digest on the authorization request, together with a random CSRF token that the pages embed.
// Every later step must present both: the cookie (so a request id sent to someone else is useless:
// no login CSRF, no session fixation) and the CSRF token (so another site cannot post the forms).
// The request itself lives server-side, so several tabs can connect at once.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';
import type { Config } from '../../config.ts';
import { credentialDigest } from './credentials.ts';
import type { AuthorizationRequestDoc } from './documents.ts';

export const REQUEST_TTL_MS = 15 * 60 * 1000;
const VALUE = /^[A-Za-z0-9_-]{43}$/;

// `__Host-` pins the cookie to this origin, but browsers accept it only with Secure, i.e. https.
const cookieName = (config: Config) => (config.baseUrl.startsWith('https:') ? '__Host-cmp_oauth' : 'cmp_oauth');

export const randomToken = () => randomBytes(32).toString('base64url');

/** The browser's binding value: the existing cookie when well-formed, else a new one. Sets the cookie. */
export function bindBrowser(ctx: Context, config: Config): string {
  const existing = readCookie(ctx, cookieName(config));
  const value = existing && VALUE.test(existing) ? existing : randomToken();
  const secure = config.baseUrl.startsWith('https:') ? '; Secure' : '';
  ctx.append('Set-Cookie', `${cookieName(config)}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${REQUEST_TTL_MS / 1000}${secure}`);
  return value;
}

function readCookie(ctx: Context, name: string): string | null {
  for (const part of (ctx.get('cookie') || '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

const equal = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/** True when this browser started the request and the form carries its CSRF token. */
export function requestBelongsHere(ctx: Context, config: Config, request: AuthorizationRequestDoc, csrf: string | null, now: Date): boolean {
  if (request.expiresAt.getTime() <= now.getTime()) return false;
  const cookie = readCookie(ctx, cookieName(config));
  if (!cookie || !equal(credentialDigest(cookie), request.browserDigest)) return false;
  return csrf === null || equal(csrf, request.csrfToken);
}
