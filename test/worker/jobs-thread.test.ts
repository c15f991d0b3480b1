// On the embedded store with a DATA_DIR file, `npm start` runs the jobs on a worker thread
// (src/worker/jobs-thread.ts): an approval expires while the request thread is blocked outright.
import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { openEmbeddedStore } from '../../src/store/embedded/embedded-store.ts';
import { createAgenda } from '../../src/jobs/agenda.ts';
import { agendaScheduler } from '../../src/jobs/scheduler.ts';
import { silentLogger } from '../../src/log.ts';
import { startJobsThread } from '../../src/worker/jobs-thread.ts';
import { startApp } from '../helpers/app.ts';

test('the jobs thread expires an approval while the request thread is blocked', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'jobs-thread-'));
  const store = await openEmbeddedStore({ dataDir: join(dir, 'data') });
  // This thread only schedules (as the web thread does); the jobs thread processes.
  const app = await startApp({ store, scheduler: agendaScheduler(await createAgenda(store)) });
  // The thread reads its configuration from the environment it is started with: this DATA_DIR, no MongoDB.
  const saved = { ...process.env };
  delete process.env.MONGODB_URI;
  Object.assign(process.env, { DATA_DIR: join(dir, 'data'), JOBS_PROCESS_EVERY: '1 second', LOG_LEVEL: 'error' });
  const stopJobs = await startJobsThread(silentLogger).finally(() => {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
  });
  t.teardown(async () => {
    await stopJobs();
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const applied = await app.admin('/admin/manifests', {
    body: {
      organization: { handle: 'threaded', name: 'Threaded', currency: 'EUR', timezone: 'Europe/Berlin', approvalTtl: 'PT1S' },
      people: [{ handle: 'ana', name: 'Ana', email: 'ana@threaded.example' }],
      agents: [{ handle: 'x', name: 'X' }],
      policies: [
        {
          handle: 'ask',
          name: 'Ask above 500',
          scope: 'ORGANIZATION',
          currencies: ['EUR'],
          rules: [{ ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: '50000' }],
          merchants: [],
        },
      ],
      apiKeys: [{ handle: 'x-key', agent: 'x' }],
    },
  });
  t.is(applied.status, 200);
  const key: string = applied.body.apiKeys['x-key'].key;
  const pending = await app.request('/v1/purchase-requests', { key, body: { merchant: 'Paper Co', amountMinor: '60000', reason: 'needs a yes' } });
  t.is(pending.body.decision.outcome, 'REQUIRES_APPROVAL');
  const id: string = pending.body.purchaseRequest.id;

  // From here this thread never returns to its event loop: nothing scheduled on it can run.
  const db = new DatabaseSync(store.location, { readOnly: true });
  const statusOf = () => {
    const row = db.prepare('SELECT doc FROM purchases WHERE id = ?').get(`s${id}`) as { doc: string } | undefined;
    return row ? (JSON.parse(row.doc) as { status: string }).status : undefined;
  };
  const pause = new Int32Array(new SharedArrayBuffer(4));
  const deadline = Date.now() + 60_000;
  let status = statusOf();
  while (status !== 'EXPIRED' && Date.now() < deadline) {
    Atomics.wait(pause, 0, 0, 100);
    status = statusOf();
  }
  db.close();
  t.is(status, 'EXPIRED');
});
