// The web process (Procfile `web`; `npm start`). It also runs the jobs, in this thread, when RUN_JOBS
// is on (the default on the embedded store, so that `npm start` alone is a whole service); the
// Procfile's `worker` process runs them apart (docs/operate/deployment.md).
import cluster from 'node:cluster';
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { bootstrap, configOrExit, listenOrExit, onShutdown, orExit } from './bootstrap.ts';
import { createHttpServer } from './http/server.ts';
import { listen, reservePort } from './http/listen.ts';
import { applyManifest } from './manifests/apply.ts';
import { parseManifest } from './manifests/parse.ts';
import { ApiError } from './http/errors.ts';
import { utf8Text } from './http/body.ts';
import { startJobs } from './compose.ts';
import { serviceApp } from './service-app.ts';
import { isLeadProcess, reportStarted, superviseWebProcesses } from './http/web-cluster.ts';
import { newLifecycle } from './lifecycle.ts';
import { stopGracefully } from './http/shutdown.ts';
import { startEmbeddedListener } from './store/wire/embedded-listener.ts';

const { values } = await orExit('src/main.ts takes one option, --manifest FILE', (async () => parseArgs({ options: { manifest: { type: 'string' } }, allowPositionals: false }))(), 2);
// PORT=0 leaves the port to the system: chosen before the configuration is read, so that the default
// BASE_URL (the OAuth issuer, the MCP resource, the API reference) names the port listened on. A
// cluster's web processes inherit the choice. The port stays held until this process listens on it.
const chosen = process.env.PORT === '0' && cluster.isPrimary ? await reservePort() : null;
if (chosen) process.env.PORT = String(chosen.port);
const initial = configOrExit();
// A PORT another process holds stops the start before the store is opened: a first start would
// otherwise generate and print the operator token (shown once) just above the error, and a restart
// would not print it again.
const reserved = chosen ?? (cluster.isPrimary ? await listenOrExit(`PORT ${initial.port}`, reservePort(initial.port)) : null);
// WEB_CONCURRENCY above 1: this process supervises that many web processes running this file and
// goes no further (src/http/web-cluster.ts); they listen on the port through it.
if (initial.webConcurrency > 1 && cluster.isPrimary) {
  await reserved?.release();
  await superviseWebProcesses(initial);
}
// In a cluster the first web process applies --manifest; it and whichever process replaces it (the
// lead) run the jobs (when RUN_JOBS) and the wire-protocol listener (a transaction's messages must all
// reach one process).
const first = cluster.isPrimary || cluster.worker?.id === 1;
const lead = isLeadProcess();
const shutdown = onShutdown();
const { deps, agenda } = await bootstrap(initial, { operatorApi: true });
const { config } = deps;
const embedded = config.mongodbUri === null;
const runsJobs = config.runJobs && lead;
deps.lifecycle = newLifecycle(runsJobs);
if (config.adminTokenSha256 === null) deps.log.warn('ADMIN_TOKEN is not set: the operator API is off');

if (values.manifest && first) {
  const bytes = await orExit(`Manifest ${values.manifest} cannot be read`, readFile(values.manifest), 2);
  let result;
  try {
    // Read and parsed as the operator API reads one (UTF-8 only, bounded depth, one YAML document, few aliases).
    result = await applyManifest(deps, parseManifest(utf8Text(bytes, 'The manifest'), /\.json$/i.test(values.manifest) ? 'json' : 'yaml'));
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    const issues = (err.issues ?? []).map((i) => `\n  ${i.path}: ${i.code}: ${i.message}`).join('');
    process.stderr.write(`Manifest ${values.manifest} refused (${err.code}): ${err.message}${issues}\n`);
    await deps.store.close().catch(() => {});
    process.exit(2);
  }
  process.stdout.write(`Manifest ${values.manifest} applied (keys are shown only now):\n${JSON.stringify(result, null, 2)}\n`);
}

// The ports first: one that cannot be had stops the start before Agenda locks any job (a crash after
// would leave those jobs to their lock's expiry, at each restart of a crash loop). Until the jobs run,
// readiness answers 503.
const server = createHttpServer(serviceApp(deps));
await reserved?.release();
const port = await listenOrExit(`PORT ${config.port}`, listen(server, config.port));
const wire =
  embedded && lead
    ? await listenOrExit(
        `EMBEDDED_MONGO_PORT ${config.embeddedMongoPort} on EMBEDDED_MONGO_HOST ${config.embeddedMongoHost}`,
        startEmbeddedListener(deps.store, config, deps.log, (text) => process.stdout.write(text)),
      )
    : null;
const stopWorker = runsJobs ? await startJobs(deps, agenda) : null;
deps.lifecycle.jobsRunning = stopWorker !== null;
// The port bound, which PORT=0 leaves to the system (the tests read it from this line).
deps.log.info('listening', { port, baseUrl: config.baseUrl, store: deps.store.engine });
reportStarted();

shutdown.ready(stopGracefully({ log: deps.log, store: deps.store, server, lifecycle: deps.lifecycle, stopJobs: stopWorker, stopListeners: wire ? () => wire.close() : null }));
