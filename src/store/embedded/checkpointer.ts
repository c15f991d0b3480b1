// A worker thread that copies the WAL back into the database file on its own connection, so that
// the fsyncs of checkpointing happen off the event loop instead of inside whichever commit
// crossed the WAL size threshold. PASSIVE checkpoints never block writers; under steady writes
// they never catch up with the end of the WAL either, so it would grow without end: once it is
// past RESTART_FRAMES, a RESTART checkpoint (which briefly holds the write lock for the few
// frames left) makes the next writer start the WAL again from its beginning.
import { DatabaseSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';

const RESTART_FRAMES = 8192; // 32 MB of 4 KB pages

const { file, intervalMs } = workerData as { file: string; intervalMs: number };
const db = new DatabaseSync(file);
db.exec('PRAGMA busy_timeout = 2000');
const passive = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
const restart = db.prepare('PRAGMA wal_checkpoint(RESTART)');
const timer = setInterval(() => {
  try {
    const { log } = passive.get() as { busy: number; log: number; checkpointed: number };
    if (log >= RESTART_FRAMES) restart.get();
  } catch {
    // Busy or closing: the next round (or the main connection) checkpoints.
  }
}, intervalMs);
parentPort!.on('message', () => {
  clearInterval(timer);
  db.close();
  // Ends this thread (not the process). Deno's worker_threads has no parentPort.close().
  process.exit(0);
});
