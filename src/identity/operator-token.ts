// The operator API is authenticated by ADMIN_TOKEN and nothing else (docs/internals/design.md §5):
// no /v1 credential reaches it. Compared in constant time over digests of equal length.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context, Next } from 'koa';
import { ApiError, unauthorized } from '../http/errors.ts';
import { bearerOf, REPEATED_AUTHORIZATION } from '../http/bearer.ts';

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

export function requireAdmin(adminToken: string | null) {
  const expected = adminToken ? digest(adminToken) : null;
  return (ctx: Context, next: Next) => {
    if (!expected) throw new ApiError(404, 'not_found', 'The operator API is not enabled (set ADMIN_TOKEN).');
    const bearer = bearerOf(ctx.req);
    if (bearer.kind === 'repeated') throw unauthorized('unauthorized', REPEATED_AUTHORIZATION);
    if (bearer.kind === 'none' || !timingSafeEqual(digest(bearer.credential), expected)) {
      throw unauthorized('unauthorized', 'The operator API needs Authorization: Bearer <ADMIN_TOKEN>.');
    }
    return next();
  };
}
