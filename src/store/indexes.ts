// Indexes, created idempotently at start and by the Procfile's release step (DESIGN.md section 2).
import type { StoreDb } from './store.ts';

interface IndexSpec {
  collection: string;
  keys: Record<string, 1 | -1>;
  options?: { unique?: boolean; expireAfterSeconds?: number; name?: string; partialFilterExpression?: Record<string, unknown> };
}

/** Agenda's collection (its MongoBackend default). */
export const AGENDA_JOBS = 'agendaJobs';

export const INDEXES: IndexSpec[] = [
  { collection: 'organizations', keys: { handle: 1 }, options: { unique: true } },
  { collection: 'people', keys: { organizationId: 1, handle: 1 }, options: { unique: true } },
  { collection: 'people', keys: { email: 1 } },
  { collection: 'agents', keys: { organizationId: 1, handle: 1 }, options: { unique: true } },
  // Archives whose follow-up is unfinished (src/approvals/close.ts finishInterruptedArchives).
  { collection: 'agents', keys: { cancelApprovals: 1 }, options: { partialFilterExpression: { cancelApprovals: true } } },
  { collection: 'policies', keys: { organizationId: 1, handle: 1 }, options: { unique: true } },
  { collection: 'policies', keys: { organizationId: 1, status: 1 } },
  { collection: 'policy_versions', keys: { policyId: 1, versionNumber: 1 }, options: { unique: true } },
  { collection: 'api_keys', keys: { prefix: 1 }, options: { unique: true } },
  { collection: 'api_keys', keys: { organizationId: 1, handle: 1 }, options: { unique: true } },
  { collection: 'policy_views', keys: { organizationId: 1, createdAt: -1 } },
  { collection: 'purchases', keys: { organizationId: 1, agentId: 1, requestedAt: -1 } },
  { collection: 'decisions', keys: { purchaseId: 1 } },
  { collection: 'approvals', keys: { state: 1, expiresAt: 1 } },
  { collection: 'approvals', keys: { agentId: 1, state: 1 } },
  { collection: 'idempotency_keys', keys: { expiresAt: 1 }, options: { expireAfterSeconds: 0 } },
  { collection: 'budget_windows', keys: { organizationId: 1, policyId: 1, periodKind: 1, periodKey: 1 } },
  { collection: 'events', keys: { dispatchedAt: 1, _id: 1 } },
  { collection: 'purchase_views', keys: { submitterId: 1, requestedAt: -1, _id: -1 } },
  { collection: 'analytics_purchases', keys: { organizationId: 1, monthKey: 1, agentId: 1 } },
  // A policy's approved spend in a period, by the time of each request (src/budgets/windows.ts attributableSpend).
  // Multikey on policyIds: one key per policy of every purchase.
  { collection: 'analytics_purchases', keys: { policyIds: 1, currency: 1, status: 1, requestedAt: 1 } },
  { collection: 'analytics_daily_spend', keys: { organizationId: 1, dayKey: 1 } },
  // Connections (OAuth 2.0 and MCP)
  { collection: 'connections', keys: { organizationId: 1, createdAt: -1 } },
  { collection: 'oauth_authorization_requests', keys: { expiresAt: 1 }, options: { expireAfterSeconds: 0 } },
  { collection: 'oauth_codes', keys: { expiresAt: 1 }, options: { expireAfterSeconds: 0 } },
  { collection: 'oauth_access_tokens', keys: { expiresAt: 1 }, options: { expireAfterSeconds: 0 } },
  { collection: 'oauth_access_tokens', keys: { connectionId: 1 } },
  { collection: 'oauth_refresh_tokens', keys: { expiresAt: 1 }, options: { expireAfterSeconds: 0 } },
  { collection: 'oauth_refresh_tokens', keys: { connectionId: 1 } },
  { collection: 'oauth_clients', keys: { expiresAt: 1 }, options: { expireAfterSeconds: 0 } },
  { collection: 'oauth_clients', keys: { createdAt: -1 } },
  { collection: 'oauth_registration_windows', keys: { expiresAt: 1 }, options: { expireAfterSeconds: 0 } },
  { collection: 'connections', keys: { clientId: 1 } },
  // The people's dashboard (src/identity/sessions/documents.ts)
  { collection: 'dashboard_sessions', keys: { expiresAt: 1 }, options: { expireAfterSeconds: 0 } },
  { collection: 'dashboard_sign_in_throttle', keys: { expiresAt: 1 }, options: { expireAfterSeconds: 0 } },
  { collection: 'approvals', keys: { organizationId: 1, state: 1, createdAt: -1 } },
  { collection: 'purchase_views', keys: { organizationId: 1, requestedAt: -1, _id: -1 } },
  // Webhooks (src/webhooks/documents.ts WEBHOOK_INDEXES)
  { collection: 'webhook_endpoints', keys: { organizationId: 1, createdAt: 1 } },
  { collection: 'webhook_endpoints', keys: { organizationId: 1, status: 1, subscribedTypes: 1 } },
  { collection: 'webhook_deliveries', keys: { eventId: 1, endpointId: 1 }, options: { unique: true } },
  { collection: 'webhook_deliveries', keys: { endpointId: 1, _id: -1 } },
  { collection: 'webhook_deliveries', keys: { status: 1, nextAttemptAt: 1 } },
  { collection: 'webhook_deliveries', keys: { endpointId: 1, status: 1 } },
  // Agenda's every() upserts {name, type: 'single'} with no unique index of its own: two workers starting
  // together could both insert, and the recurring job would run twice as often, for ever.
  { collection: AGENDA_JOBS, keys: { name: 1 }, options: { unique: true, partialFilterExpression: { type: 'single' }, name: 'single_job_name_unique' } },
];

/**
 * Indexes of earlier versions that others replaced, dropped at start (after the new ones are built) so that
 * existing databases stop maintaining their keys. By name: the default names MongoDB gave them.
 */
export const RETIRED_INDEXES: Array<{ collection: string; name: string }> = [
  // Replaced by { policyIds, currency, status, monthKey, dayKey }: a day's query fixes its month too.
  { collection: 'analytics_purchases', name: 'policyIds_1_currency_1_status_1_dayKey_1' },
  { collection: 'analytics_purchases', name: 'policyIds_1_currency_1_status_1_monthKey_1' },
  // Replaced by { policyIds, currency, status, requestedAt }: a window's spend is counted by the time of each
  // request within the period's bounds, not by labels of the zone the organisation had then.
  { collection: 'analytics_purchases', name: 'policyIds_1_currency_1_status_1_monthKey_1_dayKey_1' },
];

/**
 * Every collection the service writes, created at start: implicit creation inside a transaction fails
 * on sharded clusters (and webhook_quotas, say, has no index that would create it).
 */
// Collections without an index of their own, created at start too (implicit creation inside a
// transaction fails on sharded clusters): the webhook quotas and the configuration stamp (src/cache).
export const COLLECTIONS: string[] = [...new Set([...INDEXES.map((i) => i.collection), 'webhook_quotas', 'config_stamps'])].sort();

export async function createIndexes(db: StoreDb): Promise<void> {
  const existing = new Set(await db.listCollectionNames());
  for (const name of COLLECTIONS) if (!existing.has(name)) await db.createCollection(name);
  await removeDuplicateSingleJobs(db);
  for (const spec of INDEXES) {
    await db.collection(spec.collection).createIndex(spec.keys, spec.options ?? {});
  }
  for (const { collection, name } of RETIRED_INDEXES) {
    try {
      await db.collection(collection).dropIndex(name);
    } catch (error) {
      // IndexNotFound: already gone (dropped at an earlier start, or just now by another process starting).
      if ((error as { code?: unknown }).code !== 27) throw error;
    }
  }
}

/** Duplicates left by the race the unique index now prevents would stop it being built: keep the first. */
async function removeDuplicateSingleJobs(db: StoreDb): Promise<void> {
  const jobs = db.collection(AGENDA_JOBS);
  const groups = await jobs
    .aggregate<{ _id: string; ids: unknown[] }>([
      { $match: { type: 'single' } },
      { $sort: { _id: 1 } },
      { $group: { _id: '$name', ids: { $push: '$_id' }, count: { $sum: 1 } } },
      { $match: { count: { $gt: 1 } } },
    ])
    .toArray();
  for (const g of groups) await jobs.deleteMany({ _id: { $in: g.ids.slice(1) } } as never);
}
