// Agenda jobs of the delivery pipeline (docs/internals/design.md §1, §8). Every one is idempotent: a job that runs
// twice, or races another worker, changes nothing twice.
//   webhooks.dispatch     recurring: fans undispatched outbox events out into deliveries
//   webhooks.attempt      one per attempt, scheduled at the delivery's nextAttemptAt
//   webhooks.attempt-due  recurring safety net: every due delivery nobody is attempting (a lost
//                         schedule, a crashed worker whose lease ran out)
import type { Agenda } from 'agenda';
import type { AppDeps } from '../app-deps.ts';
import { compile } from '../http/validate.ts';
import { WebhookAttemptJob } from '../../schemas/webhooks.ts';
import { attemptDelivery, attemptDueDeliveries } from './deliver.ts';
import { dispatchEvents } from './dispatch.ts';
import { ATTEMPT_DELIVERY, ATTEMPT_DUE_DELIVERIES, DISPATCH_EVENTS } from './queue.ts';
import { warnIfUnsafe } from './runtime.ts';
import { defineJob, every as declareEvery } from '../jobs/agenda.ts';

export { ATTEMPT_DELIVERY, ATTEMPT_DUE_DELIVERIES, DISPATCH_EVENTS };

/** Intervals the worker declares (overridable in WorkerOptions). */
export const DEFAULT_DISPATCH_EVERY = '5 seconds';
export const DEFAULT_ATTEMPT_SWEEP_EVERY = '1 minute';

const attemptJob = compile(WebhookAttemptJob);

export function defineWebhookJobs(agenda: Agenda, deps: AppDeps): void {
  warnIfUnsafe(deps);
  defineJob(
    agenda,
    ATTEMPT_DELIVERY,
    async (job) => {
      if (!attemptJob.check(job.attrs.data)) {
        deps.log.error('webhooks.attempt job with malformed data; dropped', { data: job.attrs.data });
        return;
      }
      await attemptDelivery(deps, job.attrs.data.deliveryId);
    },
    // lockLimit: a worker locks no more attempts than it runs, so a second worker shares the work
    // (Agenda's default locks every due job in one worker). Of these 10, at most 2 go to any one
    // endpoint, 4 to any one organisation and 4 to any one host (attempt-slots.ts); an attempt over a
    // cap ends at once, so it never sits on a slot.
    { concurrency: 10, lockLimit: 10 },
  );
  defineJob(agenda, DISPATCH_EVENTS, async () => {
    const count = await dispatchEvents(deps);
    if (count > 0) deps.log.debug('dispatched webhook events', { count });
  });
  defineJob(agenda, ATTEMPT_DUE_DELIVERIES, async () => {
    const count = await attemptDueDeliveries(deps);
    if (count > 0) deps.log.info('swept due webhook deliveries', { count });
  });
}

/** Declares the recurring jobs (from the worker only, docs/internals/design.md §8). */
export async function scheduleRecurringWebhookJobs(
  agenda: Agenda,
  every: { dispatch?: string | number; sweep?: string | number } = {},
): Promise<void> {
  await declareEvery(agenda, every.dispatch ?? DEFAULT_DISPATCH_EVERY, DISPATCH_EVENTS);
  await declareEvery(agenda, every.sweep ?? DEFAULT_ATTEMPT_SWEEP_EVERY, ATTEMPT_DUE_DELIVERIES);
}
