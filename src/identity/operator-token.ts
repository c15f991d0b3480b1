// The operator API is authenticated by ADMIN_TOKEN and nothing else (docs/internals/design.md §5):
// no /v1 credential reaches it. Only the token's SHA-256 digest is known here (the configuration keeps
// no other, and the embedded store keeps no other of a generated one); digests of equal length are
// compared in constant time.
import { timingSafeEqual } from 'node:crypto';
import { sha256Hex } from '../digest.ts';
import type { Context, Next } from 'koa';
import { ApiError, BEARER_CHALLENGE, REFUSED_BEARER_CHALLENGE, unauthorized } from '../http/errors.ts';
import { bearerOf, REPEATED_AUTHORIZATION } from '../http/bearer.ts';

const digest = (s: string) => Buffer.from(sha256Hex(s), 'hex');

/** `tokenSha256`: the token's SHA-256 digest in hex (Config.adminTokenSha256), null when the operator API is off. */
export function requireAdmin(tokenSha256: string | null) {
  const expected = tokenSha256 === null ? null : Buffer.from(tokenSha256, 'hex');
  return (ctx: Context, next: Next) => {
    if (!expected) throw new ApiError(404, 'not_found', 'The operator API is not enabled (set ADMIN_TOKEN).');
    const bearer = bearerOf(ctx.req);
    if (bearer.kind === 'repeated') throw unauthorized('unauthorized', REPEATED_AUTHORIZATION, REFUSED_BEARER_CHALLENGE);
    const needed = 'The operator API needs Authorization: Bearer <ADMIN_TOKEN>.';
    if (bearer.kind === 'none') throw unauthorized('unauthorized', needed, BEARER_CHALLENGE);
    if (!timingSafeEqual(digest(bearer.credential), expected)) throw unauthorized('unauthorized', needed, REFUSED_BEARER_CHALLENGE);
    return next();
  };
}
