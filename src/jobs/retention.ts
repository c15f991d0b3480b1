// How long Agenda's one-off jobs stay in its collection (docs/reference/decisions.md). One that succeeded is
// removed as it ends (removeOnComplete, src/jobs/agenda.ts). One that failed for good (no retry left) stays
// FAILED_JOB_RETENTION_DAYS for operators to read its failReason, then the hourly `jobs.remove-failed` removes
// it: Agenda never does, and a relay or receiver down for a while left one document per failed job for ever.
// What the failed job was for is not lost: each has a recurring sweep behind it (src/jobs/scheduler.ts).
import type { Agenda } from 'agenda';
import type { AppDeps } from '../app-deps.ts';
import type { StoreDb } from '../store/store.ts';
import { AGENDA_JOBS, defineJob, every } from './agenda.ts';

export const FAILED_JOB_RETENTION_DAYS = 7;
export const REMOVE_FAILED_JOBS = 'jobs.remove-failed';

/** Removes the one-off jobs that failed before `now` less the retention, with no retry due and not running; returns how many. */
export async function removeFailedJobs(db: StoreDb, now: Date): Promise<number> {
  const before = new Date(now.getTime() - FAILED_JOB_RETENTION_DAYS * 86_400_000);
  const { deletedCount } = await db.collection(AGENDA_JOBS).deleteMany({ failedAt: { $lt: before }, type: 'normal', nextRunAt: null, lockedAt: null });
  return deletedCount;
}

export function defineRetentionJobs(agenda: Agenda, deps: AppDeps): void {
  defineJob(agenda, REMOVE_FAILED_JOBS, async () => {
    const count = await removeFailedJobs(deps.store.db, deps.now());
    if (count > 0) deps.log.info('removed failed jobs', { count, olderThanDays: FAILED_JOB_RETENTION_DAYS });
  });
}

export const scheduleRetentionJobs = (agenda: Agenda): Promise<void> => every(agenda, '1 hour', REMOVE_FAILED_JOBS);
