// After a submission that asks a person commits, its expiry goes on the job schedule. If this fails
// (or the process dies first), the recurring sweep expires the approval anyway.
import type { AppDeps } from '../app-deps.ts';
import type { SubmitResult } from '../purchases/submit.ts';
import { EXPIRE_APPROVAL } from './jobs.ts';

export async function scheduleExpiry(deps: AppDeps, result: SubmitResult): Promise<void> {
  if (result.status !== 201 || !result.approvalId || !result.expiresAt) return;
  try {
    await deps.scheduler.schedule(EXPIRE_APPROVAL, result.expiresAt, { approvalId: result.approvalId });
  } catch (err) {
    deps.log.warn('could not schedule approval expiry; the sweep will expire it', { approvalId: result.approvalId, err: String(err) });
  }
}
