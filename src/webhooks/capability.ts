// What webhooks contribute: the delivery jobs, and the collections of endpoints, deliveries and quotas
// (the /v1/webhooks routes are surface.ts).
import type { Capability } from '../capability.ts';
import { WEBHOOK_INDEXES } from './documents.ts';
import { defineWebhookJobs, scheduleRecurringWebhookJobs } from './jobs.ts';
import { stopAttempts } from './runtime.ts';

export const webhooks: Capability = {
  name: 'webhooks',
  defineJobs: defineWebhookJobs,
  scheduleJobs: (agenda, options) => scheduleRecurringWebhookJobs(agenda, { dispatch: options.webhookDispatchEvery, sweep: options.webhookSweepEvery }),
  // An attempt in flight is abandoned rather than waited for (up to its 10 s timeout): deliver.ts.
  stopping: stopAttempts,
  // The quotas have no index of their own.
  collections: ['webhook_quotas'],
  indexes: WEBHOOK_INDEXES,
  // Each replaced by an index of which it is a prefix: { endpointId, status, nextAttemptAt }, { status, nextAttemptAt, _id }
  // and { organizationId, createdAt, _id } (GET /v1/webhooks's whole order).
  retiredIndexes: [
    { collection: 'webhook_deliveries', name: 'endpointId_1_status_1' },
    { collection: 'webhook_deliveries', name: 'status_1_nextAttemptAt_1' },
    { collection: 'webhook_endpoints', name: 'organizationId_1_createdAt_1' },
  ],
};
