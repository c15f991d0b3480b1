// The scheduled jobs (approval expiry, webhook dispatch and delivery) on a worker thread of the web
// process: what `npm start` does on the embedded store with a DATA_DIR file, so that the jobs never
// take the request thread. The thread opens its own connection to the same database (as the
// Procfile's worker process would) and runs the jobs there (startJobs); the web thread keeps an Agenda that
// only schedules. A thread that dies takes the process with it: jobs that silently stopped would
// leave approvals pending past their expiry.
import { once } from 'node:events';
import { startSmallThread } from '../small-thread.ts';
import type { Logger } from '../log.ts';

type FromThread = { started: true } | { failed: string };

export async function startJobsThread(log: Logger): Promise<() => Promise<void>> {
  const thread = startSmallThread(new URL('./jobs-thread-main.ts', import.meta.url));
  let stopping = false;
  thread.on('error', (error) => {
    log.error('the jobs thread failed', { error: String(error) });
    if (!stopping) process.exit(1);
  });
  thread.on('exit', (code) => {
    if (stopping) return;
    log.error('the jobs thread stopped unexpectedly', { code });
    process.exit(1);
  });
  const [first] = (await once(thread, 'message')) as [FromThread];
  if ('failed' in first) {
    stopping = true;
    await thread.terminate();
    throw new Error(`the jobs thread did not start: ${first.failed}`);
  }
  log.info('jobs run on a worker thread');
  return async () => {
    stopping = true;
    const exited = once(thread, 'exit');
    thread.postMessage('stop');
    // The thread drains its jobs (bounded by startJobs' stop) and closes its store, then ends.
    const timer = setTimeout(() => void thread.terminate(), 20_000);
    await exited;
    clearTimeout(timer);
  };
}
