// The service's Prometheus metrics (docs/operate/observability.md). Other modules report through the small
// functions below and never touch prom-client; /metrics renders the registry (http.ts).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'spend_' });

const httpRequests = new Counter({
  name: 'spend_http_requests_total',
  help: 'HTTP requests answered, by method, route template and status.',
  labelNames: ['method', 'route', 'status'],
  registers: [registry],
});
const httpDuration = new Histogram({
  name: 'spend_http_request_duration_seconds',
  help: 'Time from receiving a request to its response, by method, route template and status.',
  labelNames: ['method', 'route', 'status'],
  buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});
const decisions = new Counter({
  name: 'spend_decisions_total',
  help: 'Decisions recorded, by outcome and kind (INITIAL, APPROVAL_REEVALUATION, APPROVAL_EXPIRED).',
  labelNames: ['outcome', 'kind'],
  registers: [registry],
});
const decisionReasons = new Counter({
  name: 'spend_decision_reasons_total',
  help: 'Reason codes of recorded decisions, by outcome and reason code (a decision counts once per reason).',
  labelNames: ['outcome', 'reason_code'],
  registers: [registry],
});
const approvalsExpired = new Counter({
  name: 'spend_approvals_expired_total',
  help: 'Pending approvals that expired because nobody answered in time.',
  registers: [registry],
});
const webhookDeliveries = new Counter({
  name: 'spend_webhook_delivery_attempts_total',
  help: 'Webhook delivery attempts, by result (delivered, retry, failed, exhausted) and attempt number (1..7).',
  labelNames: ['result', 'attempt'],
  registers: [registry],
});
const webhookEventsSetAside = new Counter({
  name: 'spend_webhook_events_set_aside_total',
  help: 'Outbox events the webhook dispatcher gave up on after failing to dispatch them run after run.',
  registers: [registry],
});
const transactionRetries = new Counter({
  name: 'spend_store_transaction_retries_total',
  help: 'Store transactions run again (a version conflict, or a transient error the driver retried).',
  registers: [registry],
});
const versionConflicts = new Counter({
  name: 'spend_store_version_conflicts_total',
  help: 'Conflicts: another writer changed a versioned document first, or MongoDB reported a write conflict (112).',
  registers: [registry],
});
const jobLag = new Histogram({
  name: 'spend_job_lag_seconds',
  help: 'How late scheduled work ran: now minus the time it was due, by job.',
  labelNames: ['job'],
  buckets: [0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 900, 3600],
  registers: [registry],
});

let countPendingApprovals: (() => Promise<number>) | null = null;
new Gauge({
  name: 'spend_approvals_pending',
  help: 'Approvals waiting for a person right now (read from the store at scrape time).',
  registers: [registry],
  async collect() {
    if (countPendingApprovals) this.set(await countPendingApprovals());
  },
});

/** The store the pending-approvals gauge reads at scrape time. */
export function measurePendingApprovals(count: () => Promise<number>): void {
  countPendingApprovals = count;
}

export function httpRequestDone(method: string, route: string, status: number, seconds: number): void {
  const labels = { method, route, status: String(status) };
  httpRequests.inc(labels);
  httpDuration.observe(labels, seconds);
}

export function decisionRecorded(decision: { outcome: string; reasonCodes: readonly string[] }, kind: string): void {
  decisions.inc({ outcome: decision.outcome, kind });
  for (const reason of decision.reasonCodes) decisionReasons.inc({ outcome: decision.outcome, reason_code: reason });
}

export function approvalExpired(lagSeconds: number): void {
  approvalsExpired.inc();
  jobLag.observe({ job: 'approvals.expire' }, Math.max(0, lagSeconds));
}

export function webhookAttempted(result: 'delivered' | 'retry' | 'failed' | 'exhausted', attempt: number, lagSeconds: number): void {
  webhookDeliveries.inc({ result, attempt: String(attempt) });
  jobLag.observe({ job: 'webhooks.attempt' }, Math.max(0, lagSeconds));
}

export const webhookEventSetAside = (): void => webhookEventsSetAside.inc();

/** The text /metrics answers. */
export const renderMetrics = (): Promise<string> => registry.metrics();

export const transactionRetried = (): void => transactionRetries.inc();
export const versionConflicted = (): void => versionConflicts.inc();
