// startWorker(deps, agenda, capabilities): defines every capability's jobs, declares the recurring ones
// (from the job runner only, docs/internals/design.md §8) and starts processing. Returns a stop function that finishes or
// releases the jobs in hand. src/compose.ts's startJobs hands in the service's capabilities.
import type { Agenda } from 'agenda';
import type { AppDeps } from '../app-deps.ts';
import type { Capability, WorkerOptions } from '../capability.ts';

export async function startWorker(deps: AppDeps, agenda: Agenda, capabilities: readonly Capability[], options: WorkerOptions = {}): Promise<() => Promise<void>> {
  for (const capability of capabilities) capability.defineJobs?.(agenda, deps);
  for (const capability of capabilities) await capability.scheduleJobs?.(agenda, options);
  await agenda.start();
  deps.log.info('jobs started');
  return async () => {
    // Finish the jobs in hand (bounded), then release whatever is left for another worker.
    await agenda.drain(15_000);
    deps.log.info('jobs stopped');
  };
}
