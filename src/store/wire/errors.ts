// MongoDB's error replies: {ok: 0, errmsg, code, codeName, errorLabels}. Codes and names are
// MongoDB's own (src/mongo/base/error_codes.yml), so clients react to them as they would to mongod.
import type { Document } from 'bson';

export const CODES = {
  InternalError: 1,
  BadValue: 2,
  FailedToParse: 9,
  Unauthorized: 13,
  TypeMismatch: 14,
  AuthenticationFailed: 18,
  NamespaceNotFound: 26,
  IndexNotFound: 27,
  CursorNotFound: 43,
  MaxTimeMSExpired: 50,
  NamespaceExists: 48,
  CommandNotFound: 59,
  InvalidOptions: 72,
  WriteConflict: 112,
  ExceededMemoryLimit: 146,
  NoSuchTransaction: 251,
  TransactionTooOld: 225,
  OperationNotSupportedInTransaction: 263,
  MechanismUnavailable: 334,
  ClientDisconnect: 279,
  UnsupportedOpQueryCommand: 352,
  BSONObjectTooLarge: 10334,
  DuplicateKey: 11000,
} as const;

export type CodeName = keyof typeof CODES;

/** An error that becomes a command's error reply. */
export class CommandError extends Error {
  readonly code: number;
  readonly codeName: string;
  readonly errorLabels: string[];

  constructor(codeName: CodeName, message: string, errorLabels: string[] = []) {
    super(message);
    this.code = CODES[codeName];
    this.codeName = codeName;
    this.errorLabels = errorLabels;
  }
}

const NAMES = new Map<number, string>(Object.entries(CODES).map(([name, code]) => [code, name]));

/**
 * The reply for any error a command throws. Errors from the store that carry MongoDB's code
 * (duplicate keys, immutable _id) keep it; anything else is the client's bad input as far as
 * the listener can tell (an unknown query operator, a malformed update), so BadValue.
 */
export function errorReply(error: unknown): Document {
  if (error instanceof CommandError) {
    const reply: Document = { ok: 0, errmsg: error.message, code: error.code, codeName: error.codeName };
    if (error.errorLabels.length) reply.errorLabels = error.errorLabels;
    return reply;
  }
  const e = error as { message?: unknown; code?: unknown; codeName?: unknown };
  const message = typeof e?.message === 'string' ? e.message : String(error);
  if (typeof e?.code === 'number') {
    return { ok: 0, errmsg: message, code: e.code, codeName: typeof e.codeName === 'string' ? e.codeName : (NAMES.get(e.code) ?? 'Location' + e.code) };
  }
  return { ok: 0, errmsg: message, code: CODES.BadValue, codeName: 'BadValue' };
}

/** One entry of a write command's writeErrors. */
export function writeError(index: number, error: unknown): Document {
  const { errmsg, code } = errorReply(error);
  const entry: Document = { index, code, errmsg };
  const e = error as { keyPattern?: unknown; keyValue?: unknown };
  if (e?.keyPattern) entry.keyPattern = e.keyPattern;
  if (e?.keyValue) entry.keyValue = e.keyValue;
  return entry;
}
