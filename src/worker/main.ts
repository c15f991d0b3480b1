// The worker process (Procfile `worker`): runs the scheduled jobs, against MongoDB or the embedded
// store's database in DATA_DIR (shared with the web processes, which then run with RUN_JOBS=0).
import { bootstrap, configOrExit, listenOrExit, onShutdown } from '../bootstrap.ts';
import { storeIsPrivate } from '../config.ts';
import { startJobs } from '../compose.ts';
import { stopGracefully } from '../http/shutdown.ts';
import { serveWorkerMetrics } from './metrics-listener.ts';

const config = configOrExit();
if (storeIsPrivate(config)) {
  process.stderr.write('The worker needs a shared store: MONGODB_URI, or a DATA_DIR other than :memory:.\n');
  process.exit(2);
}
const shutdown = onShutdown();
const { deps, agenda } = await bootstrap(config, { operatorApi: false });
// Listening first: a port that cannot be had stops the worker before Agenda locks any job (a crash after
// would leave those jobs to their lock's expiry, at each restart of a crash loop).
const { metricsPort } = config;
const stopMetrics =
  metricsPort === null
    ? async () => {}
    : await listenOrExit(`METRICS_PORT ${metricsPort}`, serveWorkerMetrics({ ...config, metricsPort }, deps.log));
const stopJobs = await startJobs(deps, agenda);
const stop = async () => {
  await stopJobs();
  await stopMetrics();
};
shutdown.ready(stopGracefully({ log: deps.log, store: deps.store, stopJobs: stop }));
