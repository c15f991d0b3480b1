// The jobs thread's entry point (src/worker/jobs-thread.ts): the Procfile worker's work, on a thread.
import { parentPort } from 'node:worker_threads';
import { bootstrap } from '../bootstrap.ts';
import { loadConfig } from '../config.ts';
import { startJobs } from '../compose.ts';
import { eventMetrics } from '../metrics/metrics.ts';

const port = parentPort!;
try {
  const { deps, agenda } = await bootstrap(loadConfig());
  const stop = await startJobs(deps, agenda);
  port.on('message', async (message: 'stop' | { metrics: number }) => {
    // The web thread's /metrics asks for what the jobs counted here (src/worker/jobs-thread.ts).
    if (message !== 'stop') return port.postMessage({ metrics: message.metrics, events: await eventMetrics() });
    try {
      await stop();
    } finally {
      await deps.store.close();
      // Ends this thread only (not the process), whatever Agenda's timers still hold.
      process.exit(0);
    }
  });
  port.postMessage({ started: true });
} catch (error) {
  port.postMessage({ failed: String((error as Error)?.message ?? error) });
}
