// What the jobs platform needs in the store: Agenda's collection, with the index that keeps a recurring
// job single; and the job that removes failed one-off jobs once kept long enough (retention.ts).
import type { Capability } from '../capability.ts';
import type { StoreDb } from '../store/store.ts';
import { AGENDA_JOBS } from './agenda.ts';
import { defineRetentionJobs, scheduleRetentionJobs } from './retention.ts';

/** Duplicates left by the race the unique index now prevents would stop it being built: keep the first. */
async function removeDuplicateSingleJobs(db: StoreDb): Promise<void> {
  const jobs = db.collection(AGENDA_JOBS);
  const groups = await jobs
    .aggregate<{ _id: string; ids: unknown[] }>([
      { $match: { type: 'single' } },
      { $sort: { _id: 1 } },
      { $group: { _id: '$name', ids: { $push: '$_id' }, count: { $sum: 1 } } },
      { $match: { count: { $gt: 1 } } },
    ])
    .toArray();
  for (const g of groups) await jobs.deleteMany({ _id: { $in: g.ids.slice(1) } } as never);
}

export const jobs: Capability = {
  name: 'jobs',
  defineJobs: defineRetentionJobs,
  scheduleJobs: scheduleRetentionJobs,
  indexes: [
    // Agenda's every() upserts {name, type: 'single'} with no unique index of its own: two workers starting
    // together could both insert, and the recurring job would run twice as often, for ever.
    { collection: AGENDA_JOBS, keys: { name: 1 }, options: { unique: true, partialFilterExpression: { type: 'single' }, name: 'single_job_name_unique' } },
    // The failed jobs kept long enough (removeFailedJobs).
    { collection: AGENDA_JOBS, keys: { failedAt: 1 } },
  ],
  beforeIndexes: removeDuplicateSingleJobs,
};
