// The scheduled jobs (approval expiry, webhook dispatch and delivery) on a worker thread of the web
// process: what `npm start` does on the embedded store with a DATA_DIR file, so that the jobs never
// take the request thread. The thread opens its own connection to the same database (as the
// Procfile's worker process would) and runs the jobs there (startJobs); the web thread keeps an Agenda that
// only schedules. A thread that dies takes the process with it: jobs that silently stopped would
// leave approvals pending past their expiry. What the jobs count (expiries, delivery attempts, their lag)
// is counted on the thread; the web thread's /metrics asks for it at each scrape and adds it in.
import { once } from 'node:events';
import type { Worker } from 'node:worker_threads';
import { startSmallThread } from '../small-thread.ts';
import type { Logger } from '../log.ts';
import { addEventSource, type eventMetrics } from '../metrics/metrics.ts';

type Events = Awaited<ReturnType<typeof eventMetrics>>;
type FromThread = { started: true } | { failed: string } | { metrics: number; events: Events };

/** How long a scrape waits for a busy thread before it shows what the thread said last time. */
const METRICS_WAIT_MS = 2_000;

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
  const removeSource = addEventSource(threadEvents(thread));
  return async () => {
    stopping = true;
    removeSource();
    const exited = once(thread, 'exit');
    thread.postMessage('stop');
    // The thread drains its jobs (bounded by startJobs' stop) and closes its store, then ends.
    const timer = setTimeout(() => void thread.terminate(), 20_000);
    await exited;
    clearTimeout(timer);
  };
}

/**
 * Asks the thread for its event metrics. A thread too busy to answer in time is shown as it was at the last
 * scrape, never as nothing: a counter that fell would read as a restart to Prometheus.
 */
function threadEvents(thread: Worker): () => Promise<Events> {
  let asked = 0;
  let last: Events = [];
  const waiting = new Map<number, (events: Events) => void>();
  thread.on('message', (message: FromThread) => {
    if ('metrics' in message) waiting.get(message.metrics)?.(message.events);
  });
  return () =>
    new Promise((resolve) => {
      const id = ++asked;
      const done = (events: Events) => {
        clearTimeout(timer);
        waiting.delete(id);
        resolve(events);
      };
      const timer = setTimeout(() => done(last), METRICS_WAIT_MS);
      waiting.set(id, (events) => done((last = events)));
      thread.postMessage({ metrics: id });
    });
}
