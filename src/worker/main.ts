// The worker process (Procfile `worker`): runs the scheduled jobs against MongoDB.
import { bootstrap, configOrExit, onShutdown } from '../bootstrap.ts';
import { startWorker } from './start-worker.ts';
import { stopGracefully } from '../http/shutdown.ts';

const config = configOrExit();
if (config.mongodbUri === null) {
  process.stderr.write('The worker needs MONGODB_URI: on the embedded engine, `npm start` runs the jobs itself.\n');
  process.exit(2);
}
const { deps, agenda } = await bootstrap(config);
const stop = await startWorker(deps, agenda);
onShutdown(stopGracefully({ log: deps.log, store: deps.store, stopJobs: stop }));
