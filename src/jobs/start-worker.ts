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
    // Finish the jobs in hand (bounded), then release whatever is left for another worker. Their slow
    // work (a webhook attempt) is abandoned first, to be done again, so the drain waits only for the store.
    for (const capability of capabilities) capability.stopping?.(deps);
    const { timedOut, running } = await drain(agenda, 15_000);
    // timedOut: the drain gave up, and `running` jobs were cut off (their locks run out, they run again).
    deps.log.info('jobs stopped', { timedOut, running });
  };
}

/**
 * agenda.drain(timeoutMs), ended as soon as no job runs. Agenda 6 looks for the end only just after a
 * job's 'complete' event, which comes before the job's document is removed (removeOnComplete) and the
 * job stops counting as running: the last job never ended the drain, and every stop with a job in
 * hand waited the whole timeout.
 */
async function drain(agenda: Agenda, timeoutMs: number): Promise<{ timedOut: boolean; running: number }> {
  const done = new AbortController();
  const watch = setInterval(() => {
    agenda.getRunningStats().then(
      (stats) => {
        if (stats.runningJobs === 0) done.abort();
      },
      () => done.abort(),
    );
  }, 50);
  try {
    const { timedOut, running } = await agenda.drain({ timeout: timeoutMs, signal: done.signal });
    return { timedOut, running };
  } finally {
    clearInterval(watch);
  }
}
