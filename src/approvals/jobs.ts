// Agenda jobs of the approval lifecycle. `approvals.expire` is scheduled for each pending approval at
// its expiresAt; `approvals.expire-due` sweeps for overdue ones, so a crash between a commit and the
// scheduling loses no expiry, and finishes archives whose approval cancellations were interrupted.
// Both are idempotent (closeApproval ignores anything not PENDING).
import type { Agenda } from 'agenda';
import type { AppDeps } from '../app-deps.ts';
import { EXPIRE_APPROVAL } from '../purchases/handler.ts';
import { expireApproval, expireDueApprovals, finishInterruptedArchives } from './close.ts';

export { EXPIRE_APPROVAL };
export const EXPIRE_DUE_APPROVALS = 'approvals.expire-due';

export function defineApprovalJobs(agenda: Agenda, deps: AppDeps): void {
  agenda.define(EXPIRE_APPROVAL, async (job) => {
    const { approvalId } = job.attrs.data as { approvalId: string };
    await expireApproval(deps, approvalId);
  });
  agenda.define(EXPIRE_DUE_APPROVALS, async () => {
    const count = await expireDueApprovals(deps);
    if (count > 0) deps.log.info('expired overdue approvals', { count });
    const cancelled = await finishInterruptedArchives(deps);
    if (cancelled > 0) deps.log.info('cancelled pending approvals of archived agents', { count: cancelled });
  });
}
