// Agenda 6 on our own store connection (docs/internals/design.md §8): connect the store first, then create Agenda
// and await `ready`. MongoBackend reuses the connection and leaves it open on stop. On the embedded
// engine `store.db.raw` offers the same Db surface, so the same code runs on both.
import { Agenda, InMemoryNotificationChannel, type Job } from 'agenda';
import { MongoBackend } from '@agendajs/mongo-backend';
import { isDuplicateKeyError, type Store } from '../store/store.ts';

/** Agenda's collection (its MongoBackend default). */
export const AGENDA_JOBS = 'agendaJobs';

export interface JobsOptions {
  /** How often due jobs are polled for. */
  processEvery?: number | string;
  /** How long a job's lock lasts before another worker may take it again (jobs must be idempotent). */
  lockLifetimeMs?: number;
}

export async function createAgenda(store: Store, options: JobsOptions = {}): Promise<Agenda> {
  const agenda = new Agenda({
    backend: new MongoBackend({ mongo: store.db.raw }),
    processEvery: options.processEvery ?? '5 seconds',
    defaultLockLifetime: options.lockLifetimeMs ?? 60_000,
    removeOnComplete: true,
    // A job this process schedules to run before its next poll is taken up at once, not at that poll:
    // a webhook attempt resumed when another ends (src/webhooks/deliver.ts), a retry, the next dispatch.
    // Other processes' jobs still wait for the poll (docs/reference/decisions.md).
    notificationChannel: new InMemoryNotificationChannel(),
  });
  await agenda.ready;
  return agenda;
}

/**
 * agenda.define, with the job's lock kept while it runs (touched every third of its lifetime). Agenda 6
 * cancels a job its worker has not touched within the lock lifetime, and any worker may then lock the
 * same job again and run it beside the first: a replay over a long range, or a sweep through a backlog,
 * runs longer than the lifetime. The last touch ends before the handler's result is recorded.
 */
export function defineJob<DATA = unknown>(agenda: Agenda, name: string, handler: (job: Job<DATA>) => Promise<void>, options?: Parameters<Agenda['define']>[2]): void {
  agenda.define<DATA>(
    name,
    async (job) => {
      let touching = Promise.resolve();
      const timer = setInterval(() => {
        touching = touching.then(() => job.touch()).catch(() => undefined);
      }, agenda.definitions[name].lockLifetime / 3);
      try {
        await handler(job);
      } finally {
        clearInterval(timer);
        await touching;
      }
    },
    options,
  );
}

/**
 * Declares a recurring job (agenda.every). Its {name, type: 'single'} document is unique (src/jobs/capability.ts),
 * so a worker starting beside another may lose the insert race with a duplicate-key error: the job then
 * exists, and the second try updates it.
 */
export async function every(agenda: Agenda, interval: string | number, name: string): Promise<void> {
  try {
    await agenda.every(interval, name);
  } catch (error) {
    if (!isDuplicateKeyError(error)) throw error;
    await agenda.every(interval, name);
  }
}
