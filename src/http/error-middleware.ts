// Mounted first (docs/internals/design.md §6a): renders docs/reference/contract.md §7's error body for expected errors,
// and logs anything else once as a 500 `internal_error` without exposing its message.
import type { Context, Next } from 'koa';
import { ApiError } from './errors.ts';
import type { Store } from '../store/store.ts';
import type { Logger } from '../log.ts';
import { describeError, storeFailure } from './store-failure.ts';

export function errorMiddleware(deps: { store: Store; log: Logger }) {
  return async (ctx: Context, next: Next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) throw new ApiError(404, 'not_found', 'No such resource.');
      // The router answers an HTTP method it implements nowhere (TRACE, PROPFIND...) with a bare 501:
      // to a client that is the same mistake as any other method the resource does not allow.
      if ((ctx.status === 405 || ctx.status === 501) && ctx.body === undefined) throw new ApiError(405, 'method_not_allowed', 'Method not allowed on this resource.');
    } catch (err) {
      const apiError = storeFailure(deps, err, { method: ctx.method, path: ctx.path }) ?? toApiError(err);
      if (!apiError) deps.log.error('unhandled error', { err: describeError(err), method: ctx.method, path: ctx.path });
      const rendered = apiError ?? new ApiError(500, 'internal_error', 'Something went wrong on our side. It is safe to retry.');
      ctx.status = rendered.status;
      ctx.body = rendered.toBody();
      if (rendered.headers) ctx.set(rendered.headers);
    }
  };
}

/** Errors raised by the HTTP stack itself (body parsers, routers) mapped onto the contract's codes. */
function toApiError(err: unknown): ApiError | null {
  if (err instanceof ApiError) return err;
  const e = err as { status?: number; statusCode?: number; type?: string; expose?: boolean };
  const status = e?.status ?? e?.statusCode;
  if (status === 413 || e?.type === 'entity.too.large') {
    return new ApiError(413, 'payload_too_large', 'The request body is larger than this operation accepts.');
  }
  if (status === 415) return new ApiError(415, 'unsupported_media_type', 'Send the body as Content-Type: application/json.');
  if (status === 400 && e?.expose) return new ApiError(400, 'malformed_json', 'The request body is not valid JSON.');
  if (status === 405) return new ApiError(405, 'method_not_allowed', 'Method not allowed on this resource.');
  return null;
}
