// Mounted first (docs/internals/design.md §6a): renders docs/reference/contract.md §7's error body for expected errors,
// and logs anything else once as a 500 `internal_error` without exposing its message.
import type { Context, Next } from 'koa';
import { ApiError, StorageFull, StoreUnavailable, storeUnavailable } from './errors.ts';
import { isStorageFull, isStoreUnavailable } from '../store/store.ts';
import type { Logger } from '../log.ts';

/** `onStorageFull`: told when a request's write failed for lack of space (readiness then fails). */
export function errorMiddleware(log: Logger, onStorageFull: () => void = () => {}) {
  return async (ctx: Context, next: Next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) throw new ApiError(404, 'not_found', 'No such resource.');
      // The router answers an HTTP method it implements nowhere (TRACE, PROPFIND...) with a bare 501:
      // to a client that is the same mistake as any other method the resource does not allow.
      if ((ctx.status === 405 || ctx.status === 501) && ctx.body === undefined) throw new ApiError(405, 'method_not_allowed', 'Method not allowed on this resource.');
    } catch (err) {
      const apiError = toApiError(err);
      if (apiError instanceof StorageFull) {
        onStorageFull();
        log.warn('storage full: a write found no space', { err: describe(err), method: ctx.method, path: ctx.path });
      } else if (apiError instanceof StoreUnavailable) {
        log.warn('store unavailable: a request gave up', { err: describe(apiError.cause), method: ctx.method, path: ctx.path });
      } else if (!apiError) {
        log.error('unhandled error', { err: describe(err), method: ctx.method, path: ctx.path });
      }
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
  if (isStoreUnavailable(err)) return storeUnavailable(err);
  // Before any other mapping: a store error for lack of space may also carry a status of its own.
  if (isStorageFull(err)) return new StorageFull(err);
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

function describe(err: unknown): Record<string, unknown> {
  if (err instanceof Error) return { name: err.name, message: err.message, stack: err.stack };
  return { value: String(err) };
}
