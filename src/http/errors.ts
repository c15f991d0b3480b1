// One error hierarchy (docs/internals/design.md §6a): every expected failure carries its HTTP status and the
// stable code of docs/reference/contract.md §7. The error middleware renders them; anything else is a 500.

export interface ErrorIssue {
  path: string;
  code: string;
  message: string;
}

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly issues?: ErrorIssue[];
  readonly headers?: Record<string, string>;

  constructor(status: number, code: string, message: string, issues?: ErrorIssue[], headers?: Record<string, string>) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    if (issues) this.issues = issues;
    if (headers) this.headers = headers;
  }

  toBody(): { error: { code: string; message: string; issues?: ErrorIssue[] } } {
    return {
      error: {
        code: this.code,
        message: this.message,
        ...(this.issues ? { issues: this.issues } : {}),
      },
    };
  }
}

/** At most this many issues are listed, the first ones found (docs/reference/decisions.md, "What `issues` lists"). */
export const MAX_ISSUES = 100;

export const invalidRequest = (issues: ErrorIssue[], message = 'The request is not valid.') =>
  new ApiError(400, 'invalid_request', message, issues.slice(0, MAX_ISSUES));

export const notFound = (what = 'resource') => new ApiError(404, 'not_found', `No such ${what}.`);

/**
 * What a 401 asks for (RFC 9110 15.5.2: every 401 names a scheme in WWW-Authenticate). RFC 6750 3 and
 * 3.1: `Bearer` alone when no credential was sent, `invalid_token` when the one sent was refused.
 */
export const BEARER_CHALLENGE = 'Bearer';
export const REFUSED_BEARER_CHALLENGE = 'Bearer error="invalid_token"';

export const unauthorized = (code: string, message: string, challenge: string) =>
  new ApiError(401, code, message, undefined, { 'WWW-Authenticate': challenge });

export const forbidden = (code: string, message: string) => new ApiError(403, code, message);

export const conflict = (code: string, message: string) => new ApiError(409, code, message);

/** Raised by command handlers when a versioned document changed under us; the command is retried. */
export class VersionConflict extends Error {
  constructor(what: string) {
    super(`version conflict on ${what}`);
    this.name = 'VersionConflict';
  }
}

/**
 * A command that could not commit within its retry budget, or a store that did not answer within its
 * deadline: 503 with docs/reference/contract.md's `internal_error` code (its condition: a server failure, safe to retry a
 * submission with the same Idempotency-Key; docs/reference/contract.md has no 503 code for this) and Retry-After.
 */
export class StoreUnavailable extends ApiError {
  constructor(cause: unknown) {
    super(
      503,
      'internal_error',
      'The service is busy and could not complete this request in time. Retry shortly; a purchase submission is safe to retry with the same Idempotency-Key.',
      undefined,
      { 'retry-after': '1' },
    );
    this.name = 'StoreUnavailable';
    this.cause = cause;
  }
}

export const storeUnavailable = (cause: unknown) => new StoreUnavailable(cause);

/**
 * A write that found no space (isStorageFull): 503 with the contract's `internal_error` (as
 * StoreUnavailable; docs/reference/contract.md §7 has no code of its own for it) and a Retry-After
 * longer than a busy store's, since space comes back when an operator frees it, not in a second. The
 * write was not kept, so a retry with the same Idempotency-Key is decided afresh.
 */
export const STORAGE_FULL_RETRY_AFTER_S = 30;

export class StorageFull extends ApiError {
  constructor(cause: unknown) {
    super(
      503,
      'internal_error',
      'The service cannot store new data right now. Nothing of this request was kept; retry later. A purchase submission is safe to retry with the same Idempotency-Key.',
      undefined,
      { 'retry-after': String(STORAGE_FULL_RETRY_AFTER_S) },
    );
    this.name = 'StorageFull';
    this.cause = cause;
  }
}
