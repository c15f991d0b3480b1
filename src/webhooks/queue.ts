// Putting delivery attempts on the job schedule after the transaction that made them due has
// committed. A failure here is logged, never fatal: the recurring sweep (jobs.ts) attempts every
// due delivery anyway, so a crash or a scheduling error between commit and schedule loses nothing.
import type { AppDeps } from '../app-deps.ts';

export const ATTEMPT_DELIVERY = 'webhooks.attempt';
export const DISPATCH_EVENTS = 'webhooks.dispatch';
export const ATTEMPT_DUE_DELIVERIES = 'webhooks.attempt-due';

export async function scheduleAttempts(deps: AppDeps, due: Array<{ deliveryId: string; at: Date }>): Promise<void> {
  for (const { deliveryId, at } of due) {
    try {
      await deps.scheduler.schedule(ATTEMPT_DELIVERY, at, { deliveryId });
    } catch (err) {
      deps.log.warn('could not schedule a webhook attempt; the sweep will make it', { deliveryId, err: String(err) });
    }
  }
}
