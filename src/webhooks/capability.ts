// What webhooks contribute: the /v1/webhooks routes, the delivery jobs, and the collections of
// endpoints, deliveries and quotas.
import type { Capability } from '../capability.ts';
import { WEBHOOK_INDEXES } from './documents.ts';
import { defineWebhookJobs, scheduleRecurringWebhookJobs } from './jobs.ts';
import { webhookRoutes } from './routes.ts';

export const webhooks: Capability = {
  name: 'webhooks',
  routes: (deps) => [webhookRoutes(deps)],
  defineJobs: defineWebhookJobs,
  scheduleJobs: (agenda, options) => scheduleRecurringWebhookJobs(agenda, { dispatch: options.webhookDispatchEvery, sweep: options.webhookSweepEvery }),
  // The quotas have no index of their own.
  collections: ['webhook_quotas'],
  indexes: WEBHOOK_INDEXES,
  // Replaced by { endpointId, status, nextAttemptAt }, of which it is a prefix.
  retiredIndexes: [{ collection: 'webhook_deliveries', name: 'endpointId_1_status_1' }],
};
