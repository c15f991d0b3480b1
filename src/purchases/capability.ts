// What purchases contribute to the store: the indexes of purchases, decisions, idempotency keys and the
// read models (purchase_views, analytics_*). Their routes are surface.ts.
import type { Capability } from '../capability.ts';
import { backfillCommittedWindowIds } from './projection.ts';
import { refoldOnce } from '../store/text-search.ts';

export const purchases: Capability = {
  name: 'purchases',
  // The markers of finished data upgrades.
  collections: ['migrations'],
  // Analytics rows of an older release get the windows their purchase committed into, and purchase views the
  // folded merchant the dashboard's filter matches.
  beforeIndexes: async (db) => {
    await backfillCommittedWindowIds(db);
    await refoldOnce(db, { marker: 'purchase_views.merchantFold', collection: 'purchase_views', field: 'merchantFold', source: 'readback.merchant' });
  },
  indexes: [
    // An organisation's purchases (the receipt audit). Not by agent: nothing reads them so, and keys clustered
    // by agent dirty a page per agent in each commit group (docs/internals/performance.md).
    { collection: 'purchases', keys: { organizationId: 1, requestedAt: -1 } },
    { collection: 'decisions', keys: { purchaseId: 1 } },
    { collection: 'idempotency_keys', keys: { expiresAt: 1 }, options: { expireAfterSeconds: 0 } },
    { collection: 'purchase_views', keys: { submitterId: 1, requestedAt: -1, _id: -1 } },
    // The purchases people made on the dashboard for an agent, which its connections list too (src/mcp/list-purchases.ts):
    // partial, so that the purchases agents make themselves write no key to it.
    {
      collection: 'purchase_views',
      keys: { agentId: 1, 'readback.origin': 1, requestedAt: -1, _id: -1 },
      options: { partialFilterExpression: { 'readback.origin': 'DASHBOARD' } },
    },
    { collection: 'purchase_views', keys: { organizationId: 1, requestedAt: -1, _id: -1 } },
    // Also, with the next, a policy's approved spend in a period and what committed into a window, label by
    // label (src/budgets/windows.ts approvedSpend): read only when a window is opened or reconciled.
    { collection: 'analytics_purchases', keys: { organizationId: 1, monthKey: 1 } },
    { collection: 'analytics_purchases', keys: { organizationId: 1, dayKey: 1 } },
    { collection: 'analytics_daily_spend', keys: { organizationId: 1, dayKey: 1 } },
  ],
  retiredIndexes: [
    // Multikey, one key per policy and per window of every purchase (20 keys a decision at the bench's 10
    // policies): 150 us of CPU a decision on the embedded store, for reads only a window opened or reconciled
    // makes, now through { organizationId, dayKey } and { organizationId, monthKey }.
    { collection: 'analytics_purchases', name: 'policyIds_1_currency_1_status_1_requestedAt_1' },
    { collection: 'analytics_purchases', name: 'committedWindowIds_1_requestedAt_1' },
    // Replaced by { policyIds, currency, status, monthKey, dayKey }: a day's query fixes its month too.
    { collection: 'analytics_purchases', name: 'policyIds_1_currency_1_status_1_dayKey_1' },
    { collection: 'analytics_purchases', name: 'policyIds_1_currency_1_status_1_monthKey_1' },
    // Replaced by { policyIds, currency, status, requestedAt }: a window's spend is counted by the time of each
    // request within the period's bounds, not by labels of the zone the organisation had then.
    { collection: 'analytics_purchases', name: 'policyIds_1_currency_1_status_1_monthKey_1_dayKey_1' },
    // Replaced by { organizationId, monthKey } and { organizationId, requestedAt }: no read needed the agent in
    // them, and a key per agent's place in the index cost each commit group a page per agent: 4.5 fewer write
    // calls and 12 % fewer bytes written a decision at the bench's 20 agents (docs/internals/performance.md).
    { collection: 'analytics_purchases', name: 'organizationId_1_monthKey_1_agentId_1' },
    { collection: 'purchases', name: 'organizationId_1_agentId_1_requestedAt_-1' },
  ],
};
