// A job that runs longer than its lock lifetime (a replay over a long range, a sweep through a backlog)
// keeps its lock while it runs (src/jobs/agenda.ts defineJob): Agenda 6 cancels a job its worker has not
// touched within the lifetime, and another worker then takes the same job and runs it beside the first.
import test from 'ava';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createIndexes } from '../../src/compose.ts';
import { createAgenda, defineJob } from '../../src/jobs/agenda.ts';
import { testStore } from '../helpers/store.ts';

const LOCK_LIFETIME_MS = 1000;

test('a job running for several lock lifetimes is neither cancelled nor run by a second worker', async (t) => {
  const store = await testStore();
  await createIndexes(store.db);
  const workers = await Promise.all([0, 1].map(() => createAgenda(store, { processEvery: 100, lockLifetimeMs: LOCK_LIFETIME_MS })));
  const started: number[] = [];
  const failures: string[] = [];
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  try {
    workers.forEach((agenda, worker) => {
      defineJob(agenda, 'long', async () => {
        started.push(worker);
        await released;
      });
      agenda.on('fail:long', (error: Error) => failures.push(error.message));
      agenda.on('complete:long', () => finish());
    });
    await Promise.all(workers.map((agenda) => agenda.start()));
    await workers[0].now('long');
    while (started.length === 0) await sleep(50);
    await sleep(4 * LOCK_LIFETIME_MS);
    release();
    await finished;
    t.is(started.length, 1, 'run by one worker only');
    t.deepEqual(failures, []);
  } finally {
    release();
    for (const agenda of workers) await agenda.stop();
    await store.close();
  }
});

test('every job of the service is defined with its lock kept (defineJob, not agenda.define)', async (t) => {
  const src = fileURLToPath(new URL('../../src/', import.meta.url));
  const files = (await readdir(src, { recursive: true })).filter((f) => f.endsWith('.ts') && f !== join('jobs', 'agenda.ts'));
  const defining = [];
  for (const f of files) if ((await readFile(join(src, f), 'utf8')).includes('.define(')) defining.push(f);
  t.deepEqual(defining, []);
});
