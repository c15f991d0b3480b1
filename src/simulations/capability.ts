// What simulations contribute: the routes under /v1/simulations and the shadow report, the replay job,
// and the collections of replays and of shadow evaluations (none of which a decision reads).
import type { Capability } from '../capability.ts';
import { REPLAY_CHANGES, REPLAY_JOB, REPLAYS, runReplayJob } from './replay-run.ts';
import { simulationRoutes, shadowRoutes } from './routes.ts';
import { SHADOW_DECISIONS } from './shadow.ts';
import { SHADOWS } from '../policies/shadows.ts';

export const simulations: Capability = {
  name: 'simulations',
  routes: (deps) => [simulationRoutes(deps), shadowRoutes(deps)],
  defineJobs: (agenda, deps) => {
    agenda.define(REPLAY_JOB, async (job) => {
      const { replayId } = job.attrs.data as { replayId: string };
      await runReplayJob(deps, replayId);
    });
  },
  collections: [SHADOWS],
  indexes: [
    { collection: REPLAYS, keys: { organizationId: 1, createdAt: -1 } },
    { collection: REPLAY_CHANGES, keys: { replayId: 1, requestedAt: 1, purchaseId: 1 } },
    { collection: SHADOW_DECISIONS, keys: { versionId: 1, changed: 1, requestedAt: 1, purchaseId: 1 } },
    { collection: SHADOWS, keys: { organizationId: 1, status: 1 } },
  ],
};
