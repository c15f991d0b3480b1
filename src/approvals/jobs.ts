// Agenda jobs of the approval lifecycle. `approvals.expire` is scheduled for each pending approval at
// its expiresAt; `approvals.expire-due` sweeps for overdue ones, so a crash between a commit and the
// scheduling loses no expiry, and finishes archives whose approval cancellations were interrupted.
// Both are idempotent (closeApproval ignores anything not PENDING).
// `approvals.notify` emails the approvers what is due (the request, later the reminder), retried with
// backoff when the relay fails; `approvals.notify-due` sweeps up what a lost schedule or exhausted
// retries left (src/approvals/notices.ts: idempotent per approval, person and message).
import { exponential, type Agenda } from 'agenda';
import type { AppDeps } from '../app-deps.ts';
import { defineJob } from '../jobs/agenda.ts';
import { EXPIRE_APPROVAL } from '../purchases/handler.ts';
import { expireApproval, expireDueApprovals, finishInterruptedArchives } from './close.ts';
import { NOTIFY_APPROVAL, sendDueNotice, sendDueNotices } from './notices.ts';

export { EXPIRE_APPROVAL, NOTIFY_APPROVAL };
export const EXPIRE_DUE_APPROVALS = 'approvals.expire-due';
export const NOTIFY_DUE_APPROVALS = 'approvals.notify-due';

export function defineApprovalJobs(agenda: Agenda, deps: AppDeps): void {
  defineJob(agenda, EXPIRE_APPROVAL, async (job) => {
    const { approvalId } = job.attrs.data as { approvalId: string };
    await expireApproval(deps, approvalId);
  });
  defineJob(agenda, EXPIRE_DUE_APPROVALS, async () => {
    const count = await expireDueApprovals(deps);
    if (count > 0) deps.log.info('expired overdue approvals', { count });
    const cancelled = await finishInterruptedArchives(deps);
    if (cancelled > 0) deps.log.info('cancelled pending approvals of archived agents', { count: cancelled });
  });
  defineJob(
    agenda,
    NOTIFY_APPROVAL,
    async (job) => {
      const { approvalId } = job.attrs.data as { approvalId: string };
      await sendDueNotice(deps, approvalId);
    },
    // A relay that failed is tried again after about 1, 2, 4, 8 and 16 seconds; after that the sweep.
    { backoff: exponential({ delay: 1000, factor: 2, maxRetries: 5, jitter: 0.2 }) },
  );
  defineJob(agenda, NOTIFY_DUE_APPROVALS, async () => {
    const count = await sendDueNotices(deps);
    if (count > 0) deps.log.info('sent overdue approval emails', { count });
  });
}
