// The web process (Procfile `web`; `npm start`). It also runs the jobs when RUN_JOBS is on (the
// default on the embedded store, so that `npm start` alone is a whole service).
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { bootstrap, configOrExit, onShutdown } from './bootstrap.ts';
import { createApp } from './http/app.ts';
import { applyManifest } from './manifests/apply.ts';
import { startWorker } from './worker/start-worker.ts';

const { values } = parseArgs({ options: { manifest: { type: 'string' } }, allowPositionals: false });
const { deps, agenda } = await bootstrap(configOrExit());
const { config } = deps;
if (config.adminToken === null) deps.log.warn('ADMIN_TOKEN is not set: the operator API is off');

if (values.manifest) {
  const text = await readFile(values.manifest, 'utf8');
  const manifest = /\.json$/i.test(values.manifest) ? JSON.parse(text) : parseYaml(text);
  const result = await applyManifest(deps, manifest);
  process.stdout.write(`Manifest ${values.manifest} applied (keys are shown only now):\n${JSON.stringify(result, null, 2)}\n`);
}

const stopWorker = config.runJobs ? await startWorker(deps, agenda) : null;
const server = createApp(deps).listen(config.port, () => deps.log.info('listening', { port: config.port, baseUrl: config.baseUrl, store: deps.store.engine }));

onShutdown(async (signal) => {
  deps.log.info('stopping', { signal });
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
  if (stopWorker) await stopWorker();
  await deps.store.close();
});
