// startWorker(deps): defines every job, declares the recurring ones (from the worker only, docs/internals/design.md §8)
// and starts processing. Returns a stop function that finishes or releases the jobs in hand.
import type { Agenda } from 'agenda';
import type { AppDeps } from '../app-deps.ts';
import { defineApprovalJobs, EXPIRE_DUE_APPROVALS } from '../approvals/jobs.ts';
import { defineWebhookJobs, scheduleRecurringWebhookJobs } from '../webhooks/jobs.ts';
import { every } from '../jobs/agenda.ts';

export interface WorkerOptions {
  /** How often the overdue-approval sweep runs (human interval, e.g. '1 minute'). */
  sweepEvery?: string;
  /** How often outbox events are fanned out to webhook endpoints (default 5 seconds). */
  webhookDispatchEvery?: string | number;
  /** How often due webhook deliveries without a job are swept up (default 1 minute). */
  webhookSweepEvery?: string | number;
}

export type JobDefiner = (agenda: Agenda, deps: AppDeps) => void | Promise<void>;

export async function startWorker(deps: AppDeps, agenda: Agenda, options: WorkerOptions = {}, extra: JobDefiner[] = []): Promise<() => Promise<void>> {
  defineApprovalJobs(agenda, deps);
  defineWebhookJobs(agenda, deps);
  for (const define of extra) await define(agenda, deps);
  await every(agenda, options.sweepEvery ?? '1 minute', EXPIRE_DUE_APPROVALS);
  await scheduleRecurringWebhookJobs(agenda, { dispatch: options.webhookDispatchEvery, sweep: options.webhookSweepEvery });
  await agenda.start();
  deps.log.info('worker started');
  return async () => {
    // Finish the jobs in hand (bounded), then release whatever is left for another worker.
    await agenda.drain(15_000);
    deps.log.info('worker stopped');
  };
}
