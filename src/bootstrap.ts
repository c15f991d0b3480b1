// Shared by the web and worker entry points: configuration checked, store connected and indexed,
// Agenda ready on the same connection, dependencies built once (docs/internals/design.md §6a) by the composition root
// (src/compose.ts).
import { randomBytes } from 'node:crypto';
import type { Agenda } from 'agenda';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { createLogger } from './log.ts';
import { openStore } from './store/open-store.ts';
import { DataDirError } from './store/embedded/database-file.ts';
import { EmbeddedStore } from './store/embedded/embedded-store.ts';
import type { Store } from './store/store.ts';
import { composeDeps, createIndexes } from './compose.ts';
import { createAgenda } from './jobs/agenda.ts';
import { agendaScheduler } from './jobs/scheduler.ts';
import type { AppDeps } from './app-deps.ts';
import { HARD_EXIT_MS } from './http/shutdown.ts';
import { ensureSigningKey } from './receipts/keys.ts';

export function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

/**
 * On the embedded store, a missing ADMIN_TOKEN or WEBHOOK_ENCRYPTION_KEY is generated once and
 * kept in the database, so that printed tokens and sealed webhook secrets outlive a restart
 * (and the worker process uses the same key). The token is printed once, when created, and only its
 * digest is kept: it is a credential, and the database a file that backups and analysts read. Only a
 * process that serves the operator API makes the token: a worker started first printed it in its own
 * log, and `npm start` then printed none.
 */
async function withGeneratedSecrets(config: Config, store: Store, operatorApi: boolean): Promise<Config> {
  if (!(store instanceof EmbeddedStore)) return config;
  const where = store.location === ':memory:' ? 'for this process only (DATA_DIR=:memory:)' : `kept in ${store.location}`;
  if (config.adminTokenSha256 === null && operatorApi) {
    const { sha256, created } = await store.credentialDigest('admin-token', () => randomBytes(24).toString('base64url'));
    // Printed once, on purpose: the embedded default is for a person at a terminal.
    const kept = store.location === ':memory:' ? 'for this process only' : `only its digest is kept, in ${store.location}`;
    if (created !== null) process.stdout.write(`\nOperator API token (generated, shown this once; ${kept}): ${created}\n\n`);
    config = { ...config, adminTokenSha256: sha256 };
  }
  if (config.webhookEncryptionKey === null) {
    const { value, created } = await store.secret('webhook-encryption-key', () => randomBytes(32).toString('hex'));
    if (created) process.stdout.write(`Webhook signing secrets are sealed with a generated key, ${where} (set WEBHOOK_ENCRYPTION_KEY to choose one).\n`);
    config = { ...config, webhookEncryptionKey: value };
  }
  return config;
}

/**
 * A start-up step that fails for a reason outside the code (a port taken, a server down, a file
 * missing): one line on stderr naming the setting and the cause, instead of a stack trace, then exit.
 * Nothing has served yet, so nothing is left half done.
 */
export async function orExit<T>(what: string, step: Promise<T>, code = 1): Promise<T> {
  try {
    return await step;
  } catch (err) {
    process.stderr.write(`${what}: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(code);
  }
}

/** Binding `port` (and host), or exit 1 with one line naming the setting (EADDRINUSE, EACCES, EADDRNOTAVAIL). */
export const listenOrExit = <T>(setting: string, listening: Promise<T>): Promise<T> => orExit(`${setting}: cannot listen`, listening);

async function openStoreOrExit(config: Config): Promise<Store> {
  try {
    return await openStore({ mongodbUri: config.mongodbUri ?? undefined, dbName: config.mongodbDb ?? undefined, timeoutMs: config.mongodbTimeoutMs, dataDir: config.dataDir, synchronous: config.sqliteSynchronous });
  } catch (err) {
    if (err instanceof DataDirError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    // The driver's message names the cause (refused, timed out, authentication) and never the URI's password.
    if (config.mongodbUri !== null) return orExit('MONGODB_URI: cannot use the database', Promise.reject(err));
    throw err;
  }
}

const NO_SEAL_WARNING =
  'no WEBHOOK_ENCRYPTION_KEY: the receipt signing key is stored unsealed. Setting one later does not seal it: a new key signs, and the unsealed ones leave /.well-known/jwks.json (their receipts no longer verify there) until `npm run admin -- adopt-signing-keys` publishes them again (docs/operate/auditors.md#keys-stored-before-the-encryption-key)';

/** `operatorApi`: this process serves the operator API (the web process, not the worker). */
export async function bootstrap(initial: Config, { operatorApi }: { operatorApi: boolean }): Promise<{ deps: AppDeps; agenda: Agenda }> {
  const log = createLogger(initial.logLevel);
  const store = await openStoreOrExit(initial);
  const config = await withGeneratedSecrets(initial, store, operatorApi);
  await createIndexes(store.db);
  // Decision receipts are signed with it (docs/integrate/receipts.md): made on the first start. Only by the
  // web process, which signs: a worker never does, and one started without the web process's
  // DECISION_SIGNING_KEY would add a key at each start that signs nothing yet is listed first in the JWKS.
  if (operatorApi) await ensureSigningKey(store, config, log);
  if (config.webhookEncryptionKey === null && config.decisionSigningKey === null) log.warn(NO_SEAL_WARNING);
  log.info('store ready', store instanceof EmbeddedStore ? { engine: store.engine, file: store.location, synchronous: config.sqliteSynchronous } : { engine: store.engine });
  const agenda = await createAgenda(store, { processEvery: config.jobsProcessEveryMs });
  const deps = composeDeps({ config, store, log, scheduler: agendaScheduler(agenda) });
  return { deps, agenda };
}

/**
 * Takes SIGTERM and SIGINT over at once, before the start's work: with no handler a signal's default
 * action ends the process wherever it is (jobs that already run, a store being opened), and the log's
 * "listening" or "jobs started" comes a moment before the start could hand over how to stop. A signal
 * during the start waits for `ready` to be given that, then stops as any other; the hard deadline
 * covers a start that never finishes.
 */
export function onShutdown(): { ready(stop: (signal: string) => Promise<void>): void } {
  let ready!: (stop: (signal: string) => Promise<void>) => void;
  const stopping = new Promise<(signal: string) => Promise<void>>((resolve) => (ready = resolve));
  let signalled = false;
  const handler = (signal: string) => {
    if (signalled) return;
    signalled = true;
    setTimeout(() => {
      process.stderr.write(`shutdown did not finish within ${HARD_EXIT_MS} ms; exiting\n`);
      process.exit(1);
    }, HARD_EXIT_MS).unref();
    stopping
      .then((stop) => stop(signal))
      .then(
        () => process.exit(0),
        (err) => {
          process.stderr.write(`shutdown failed: ${String(err)}\n`);
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', () => handler('SIGTERM'));
  process.on('SIGINT', () => handler('SIGINT'));
  return { ready };
}
