// list_purchases (docs/reference/contract.md §4.19): the purchases this connection may read (those it submitted,
// and those a person made for its agent on the dashboard, as get_purchase reads them: src/purchases/read.ts),
// newest first, from the purchase_views read model, paged by an opaque cursor (the position of the last purchase
// returned).
import type { StoreDb } from '../store/store.ts';
import { invalidRequest } from '../http/errors.ts';
import { isUuid } from '../ids.ts';
import { views, type PurchaseViewDoc } from '../purchases/projection.ts';
import { currentReadbacks } from '../purchases/read.ts';
import type { ConnectionPrincipal } from '../identity/connections/resolve-token.ts';

export const LIST_LIMIT_MIN = 1;
export const LIST_LIMIT_MAX = 50; // docs/reference/contract.md §8
export const LIST_LIMIT_DEFAULT = 20;

interface Position {
  requestedAt: Date;
  id: string;
}

export function encodeCursor(p: Position): string {
  return Buffer.from(JSON.stringify({ v: 1, t: p.requestedAt.toISOString(), id: p.id })).toString('base64url');
}

export function decodeCursor(cursor: string): Position | null {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(cursor)) return null;
  try {
    const raw = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { v?: unknown; t?: unknown; id?: unknown };
    // A four-digit year, as every requestedAt is: the shadow compares positions as text, where `+010000-…` sorts first.
    if (raw.v !== 1 || typeof raw.t !== 'string' || !/^\d{4}-/.test(raw.t) || !isUuid(raw.id)) return null;
    const requestedAt = new Date(raw.t);
    if (Number.isNaN(requestedAt.getTime()) || requestedAt.toISOString() !== raw.t) return null;
    // The service's ids are lower-case, and positions compare them as text: 'A' sorts before '0'..'9' and 'a'.
    return { requestedAt, id: raw.id.toLowerCase() };
  } catch {
    return null;
  }
}

export async function listConnectionPurchases(db: StoreDb, principal: ConnectionPrincipal, input: { limit?: number; cursor?: string | null }) {
  const limit = input.limit ?? LIST_LIMIT_DEFAULT;
  if (!Number.isInteger(limit) || limit < LIST_LIMIT_MIN || limit > LIST_LIMIT_MAX) {
    throw invalidRequest([{ path: 'limit', code: 'OUT_OF_RANGE', message: `limit is a whole number from ${LIST_LIMIT_MIN} to ${LIST_LIMIT_MAX}.` }]);
  }
  const position: Record<string, unknown> = {};
  // null, as nextCursor is on the last page, starts from the newest; '' is no cursor a list gave (REST's `?cursor=` too).
  if (input.cursor !== undefined && input.cursor !== null) {
    const after = decodeCursor(input.cursor);
    if (!after) throw invalidRequest([{ path: 'cursor', code: 'INVALID_CURSOR', message: 'cursor is not one this tool returned; omit it to start from the newest purchase.' }]);
    position.$or = [{ requestedAt: { $lt: after.requestedAt } }, { requestedAt: after.requestedAt, _id: { $lt: after.id } }];
  }
  // One query per set, each on its own index (the dashboard's through a partial one: src/purchases/capability.ts),
  // merged here: a page of each is enough for a page of both.
  const newest = (filter: Record<string, unknown>) =>
    views(db).purchaseViews.find({ ...filter, ...position }).sort({ requestedAt: -1, _id: -1 }).limit(limit + 1).toArray();
  const [submitted, dashboard] = await Promise.all([
    newest({ organizationId: principal.organizationId, submitterId: principal.connectionId }),
    newest({ agentId: principal.agentId, 'readback.origin': 'DASHBOARD', organizationId: principal.organizationId }),
  ]);
  const rows: PurchaseViewDoc[] = [...submitted, ...dashboard]
    .sort((a, b) => b.requestedAt.getTime() - a.requestedAt.getTime() || (a._id < b._id ? 1 : a._id > b._id ? -1 : 0))
    .slice(0, limit + 1);
  const hasMore = rows.length > limit;
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    purchases: await currentReadbacks(db, page),
    nextCursor: hasMore && last ? encodeCursor({ requestedAt: last.requestedAt, id: last._id }) : null,
    hasMore,
  };
}
