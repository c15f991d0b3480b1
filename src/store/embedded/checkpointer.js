// A worker thread that copies the WAL back into the database file on its own connection, so that
// the fsyncs of checkpointing happen off the event loop instead of inside whichever commit
// crossed the WAL size threshold. PASSIVE checkpoints never block writers; under steady writes
// they never catch up with the end of the WAL either, so it would grow without end: once it is
// past RESTART_FRAMES, a RESTART checkpoint makes the next writer start the WAL again from its
// beginning.
//
// A RESTART holds the write lock while it copies what PASSIVE has not, and then while it waits for
// the readers of the WAL to finish. Waiting through SQLite's busy handler, which sleeps 1, 2, 5,
// 10, 15, 20, 25... ms between looks, it held every writer off for 24 to 180 ms a time under a
// bench's load (the p99 of decisions). So PASSIVE first catches up, and the RESTART never waits
// inside SQLite: with busy_timeout 0 it either completes at once or gives the lock back, and is
// tried again a millisecond later.
//
// Plain JavaScript (type-checked through its JSDoc): a thread that loads TypeScript carries its own
// copy of Node's type stripper, about 16 MB more than this thread needs.
import { DatabaseSync } from 'node:sqlite';
import { setTimeout as sleep } from 'node:timers/promises';
import { parentPort, workerData } from 'node:worker_threads';

const RESTART_FRAMES = 8192; // 32 MB of 4 KB pages
/** PASSIVE rounds at most before a RESTART is tried, each copying what the writers added during the last. */
const CATCH_UP_ROUNDS = 8;
const CAUGHT_UP_FRAMES = 512;
const RESTART_ATTEMPTS = 100;
/** Past this, a RESTART is tried over and over for up to FORCE_MS (on this thread, not the writers'). */
const FORCE_FRAMES = 4 * RESTART_FRAMES;
const FORCE_MS = 500;

/** @type {{ file: string; intervalMs: number }} */
const { file, intervalMs } = workerData;
const db = new DatabaseSync(file);
db.exec('PRAGMA busy_timeout = 0');
/** @typedef {{ busy: number; log: number; checkpointed: number }} Progress */
const passive = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
const restart = db.prepare('PRAGMA wal_checkpoint(RESTART)');

let stopped = false;
let running = false;

/** @returns {Promise<void>} */
async function checkpoint() {
  let { log, checkpointed } = /** @type {Progress} */ (passive.get());
  for (let round = 1; round < CATCH_UP_ROUNDS && log - checkpointed > CAUGHT_UP_FRAMES; round++) ({ log, checkpointed } = /** @type {Progress} */ (passive.get()));
  if (log < RESTART_FRAMES) return;
  // Between a writer's transactions, with the frames it added since copied first without the lock,
  // so that the RESTART is left (almost) nothing to copy while it holds writers off.
  for (let attempt = 0; attempt < RESTART_ATTEMPTS && !stopped; attempt++) {
    passive.get();
    if (/** @type {Progress} */ (restart.get()).busy === 0) return;
    await sleep(1);
  }
  // Writes that leave no gap a millisecond apart: past FORCE_FRAMES, tried without pause for a while.
  if (log < FORCE_FRAMES) return;
  const until = Date.now() + FORCE_MS;
  for (let attempt = 1; !stopped && Date.now() < until; attempt++) {
    if (/** @type {Progress} */ (restart.get()).busy === 0) return;
    // A turn of this thread's event loop now and then, so that a 'stop' is not kept waiting.
    if (attempt % 64 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
}

const timer = setInterval(() => {
  if (running || stopped) return;
  running = true;
  checkpoint()
    .catch(() => undefined) // closing, or an I/O error the main connection will report
    .finally(() => (running = false));
}, intervalMs);

/** @type {import('node:worker_threads').MessagePort} */ (parentPort).on('message', () => {
  stopped = true;
  clearInterval(timer);
  db.close();
  // Ends this thread (not the process). Deno's worker_threads has no parentPort.close().
  process.exit(0);
});
