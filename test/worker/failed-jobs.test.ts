// Agenda's one-off jobs do not pile up in its collection (src/jobs/retention.ts): one that succeeded is removed
// as it ends, one that failed for good is kept 7 days for operators, then the worker's hourly job removes it.
// Recurring jobs, and a failed job whose retry is due, stay.
import test from 'ava';
import { setTimeout as sleep } from 'node:timers/promises';
import { exponential } from 'agenda';
import { startJobs } from '../../src/compose.ts';
import { AGENDA_JOBS, createAgenda, defineJob } from '../../src/jobs/agenda.ts';
import { REMOVE_FAILED_JOBS } from '../../src/jobs/retention.ts';
import { startApp } from '../helpers/app.ts';

const DAY = 86_400_000;

test('a one-off job that failed is kept 7 days, then removed by the hourly job; one that succeeded is removed as it ends', async (t) => {
  let clock = Date.now();
  const app = await startApp({ now: () => new Date(clock) });
  const agenda = await createAgenda(app.store, { processEvery: 100 });
  const jobs = app.store.db.collection(AGENDA_JOBS);
  const names = async (type: string) => (await jobs.find({ type }).toArray()).map((j) => j.name).sort();
  /** Runs a one-off job now and resolves once Agenda has recorded its end (and removed it, had it succeeded). */
  const run = async (name: string) => {
    const ended = new Promise((resolve) => agenda.once(`complete:${name}`, resolve));
    await agenda.now(name);
    await ended;
    // Agenda removes a one-off job that succeeded just after the event.
    for (let i = 0; i < 100 && (await jobs.findOne({ name, type: 'normal', failedAt: null })); i++) await sleep(20);
  };
  defineJob(agenda, 'test.fails', async () => Promise.reject(new Error('relay down')));
  defineJob(agenda, 'test.succeeds', async () => {});
  // Its retry is due in an hour: not a job that failed for good.
  defineJob(agenda, 'test.retries', async () => Promise.reject(new Error('relay down')), { backoff: exponential({ delay: 3_600_000, maxRetries: 3 }) });
  const stop = await startJobs(app.deps, agenda);
  try {
    t.true((await names('single')).includes(REMOVE_FAILED_JOBS), 'the worker declares the removal');
    await run('test.fails');
    await run('test.succeeds');
    await run('test.retries');
    const recurring = await names('single');
    t.deepEqual(await names('normal'), ['test.fails', 'test.retries']);
    t.like(await jobs.findOne({ name: 'test.fails' }), { failReason: 'relay down', nextRunAt: null });

    clock += 6 * DAY;
    await run(REMOVE_FAILED_JOBS);
    t.deepEqual(await names('normal'), ['test.fails', 'test.retries'], 'kept 6 days after it failed');

    clock += 2 * DAY;
    await run(REMOVE_FAILED_JOBS);
    t.deepEqual(await names('normal'), ['test.retries'], 'removed 8 days after it failed');
    t.deepEqual(await names('single'), recurring, 'the recurring jobs stay');
  } finally {
    await stop();
    await app.close();
  }
});
