// The WAL must not grow without end under steady writes. SQLite starts it again by itself when a
// writer finds it fully checkpointed, which the checkpointer thread's PASSIVE checkpoints achieve
// between writes that pause; under writes that never pause its RESTART does. This test checks the
// bound, not which of the two kept it: writing without any pause, the PASSIVE checkpoints alone
// still kept up on this machine (43 MB in the WAL after 530 MB written, the RESTART disabled), so
// no test here can tell them apart.
import test from 'ava';
import { mkdtemp, rm } from 'node:fs/promises';
import { DatabaseSync } from 'node:sqlite';
import { setTimeout as sleep } from 'node:timers/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DATABASE_FILE } from '../../src/store/embedded/database-file.ts';
import { openEmbeddedStore } from '../../src/store/embedded/embedded-store.ts';

test('the WAL stays bounded under steady writes', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'checkpointer-'));
  const store = await openEmbeddedStore({ dataDir: join(root, 'data') });
  t.teardown(async () => {
    await store.close();
    await rm(root, { recursive: true, force: true });
  });
  const blobs = store.db.collection<{ _id: string; round: number; body: string }>('blobs');
  const body = 'x'.repeat(64 * 1024);
  const started = Date.now();
  let writtenMb = 0;
  // At least 256 KB of new pages per round (four 64 KB documents), the last round's removed so that
  // the database file stays small. A pause between rounds, as between a server's requests. For 4 s
  // at least: several of the checkpointer's 1 s rounds.
  for (let round = 0; writtenMb < 64 || Date.now() - started < 4_000; round++) {
    await store.withTransaction(async (session) => {
      await blobs.deleteMany({ round: round - 1 }, { session });
      await blobs.insertMany(Array.from({ length: 4 }, (_, i) => ({ _id: `${round}-${i}`, round, body })), { session });
    });
    writtenMb += 0.25;
    await sleep(5);
  }
  // The frames in the WAL now (a PASSIVE checkpoint reports them and changes nothing a reader sees).
  const observer = new DatabaseSync(join(root, 'data', DATABASE_FILE));
  const checkpoint = observer.prepare('PRAGMA wal_checkpoint(PASSIVE)');
  let row = checkpoint.get() as { busy: number; log: number };
  // Busy while the checkpointer thread is checkpointing: asked again.
  for (let i = 0; row.busy !== 0 && i < 1000; i++) {
    await sleep(2);
    row = checkpoint.get() as { busy: number; log: number };
  }
  t.is(row.busy, 0);
  const { log } = row;
  observer.close();
  const walMb = (log * 4096) / 1048576;
  t.log(`${writtenMb} MB written, ${walMb.toFixed(1)} MB in the WAL`);
  // Never restarted, the WAL would hold at least everything written.
  t.true(walMb < writtenMb - 8, `${walMb.toFixed(1)} MB in the WAL after ${writtenMb} MB written`);
});
