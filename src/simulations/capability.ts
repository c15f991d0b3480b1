// What simulations contribute (their routes, under /v1/simulations and the shadow report, are surface.ts): the replay job,
// the shadow's catch-up job, and the collections of replays and of shadow evaluations (none of which a
// decision reads).
import type { Capability } from '../capability.ts';
import { defineJob, every } from '../jobs/agenda.ts';
import { REPLAY_CHANGES, REPLAY_JOB, REPLAYS, runReplayJob } from './replay-run.ts';
import { catchUpShadows, SHADOW_CATCH_UP } from './shadow.ts';
import { SHADOW_DECISIONS, SHADOW_HOLDS, SHADOWS } from '../policies/shadows.ts';

export const simulations: Capability = {
  name: 'simulations',
  defineJobs: (agenda, deps) => {
    defineJob(agenda, REPLAY_JOB, async (job) => {
      const { replayId } = job.attrs.data as { replayId: string };
      await runReplayJob(deps, replayId);
    });
    // Evaluates what shadows have left pending (a process stopped or killed before its drain ran): idempotent.
    defineJob(agenda, SHADOW_CATCH_UP, async () => {
      const count = await catchUpShadows(deps);
      if (count > 0) deps.log.info('shadows caught up', { count });
    });
  },
  scheduleJobs: async (agenda, options) => {
    await every(agenda, options.shadowCatchUpEvery ?? '30 seconds', SHADOW_CATCH_UP);
    // And once as the worker starts, whenever the recurring run is next due.
    await agenda.now(SHADOW_CATCH_UP);
  },
  collections: [SHADOWS],
  indexes: [
    { collection: REPLAYS, keys: { organizationId: 1, createdAt: -1 } },
    { collection: REPLAY_CHANGES, keys: { replayId: 1, requestedAt: 1, purchaseId: 1 } },
    // A shadow's changes, read in chunks by (fromKey, _id) (shadowChangesPage): in order off the index, not
    // every chunk the shadow has written since it started sorted in memory for each page.
    { collection: SHADOW_DECISIONS, keys: { versionId: 1, fromKey: 1, _id: 1 } },
    { collection: SHADOWS, keys: { organizationId: 1, status: 1 } },
    // The catch-up job's running shadows, of every organisation (partial: the stopped ones stay for their reports).
    { collection: SHADOWS, keys: { status: 1 }, options: { partialFilterExpression: { status: 'RUNNING' } } },
    { collection: SHADOW_HOLDS, keys: { due: 1 } },
    { collection: SHADOW_HOLDS, keys: { shadowId: 1 } },
  ],
  // Replaced by { versionId, fromKey, _id }, of which it is a prefix.
  retiredIndexes: [{ collection: SHADOW_DECISIONS, name: 'versionId_1_fromKey_1' }],
};
