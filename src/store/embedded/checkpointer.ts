// A worker thread that copies the WAL back into the database file (a PASSIVE checkpoint, which
// never blocks writers) on its own connection, so that the fsyncs of checkpointing happen off
// the event loop instead of inside whichever commit crossed the WAL size threshold.
import { DatabaseSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';

const { file, intervalMs } = workerData as { file: string; intervalMs: number };
const db = new DatabaseSync(file);
db.exec('PRAGMA busy_timeout = 1000');
const timer = setInterval(() => {
  try {
    db.exec('PRAGMA wal_checkpoint(PASSIVE)');
  } catch {
    // Busy or closing: the next round (or the main connection) checkpoints.
  }
}, intervalMs);
parentPort!.on('message', () => {
  clearInterval(timer);
  db.close();
  parentPort!.close();
});
