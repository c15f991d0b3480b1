// Shared by the web and worker entry points: configuration checked, store connected and indexed,
// Agenda ready on the same connection, dependencies built once (DESIGN.md 6a).
import type { Agenda } from 'agenda';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { createLogger } from './log.ts';
import { openStore } from './store/open-store.ts';
import { collections } from './store/collections.ts';
import { createIndexes } from './store/indexes.ts';
import { AgentMailboxes } from './commands/agent-mailbox.ts';
import { createAgenda } from './jobs/agenda.ts';
import { agendaScheduler } from './jobs/scheduler.ts';
import type { AppDeps } from './app-deps.ts';
import { HARD_EXIT_MS } from './http/shutdown.ts';

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

export async function bootstrap(config: Config): Promise<{ deps: AppDeps; agenda: Agenda }> {
  const log = createLogger(config.logLevel);
  const store = await openStore({ mongodbUri: config.mongodbUri ?? undefined, dbName: config.mongodbDb ?? undefined, timeoutMs: config.mongodbTimeoutMs });
  await createIndexes(store.db);
  log.info('store ready', { engine: store.engine });
  const agenda = await createAgenda(store, { processEvery: process.env.JOBS_PROCESS_EVERY || '5 seconds' });
  const deps: AppDeps = {
    config,
    store,
    collections: collections(store.db),
    log,
    now: () => new Date(),
    mailboxes: new AgentMailboxes(),
    scheduler: agendaScheduler(agenda),
  };
  return { deps, agenda };
}

export function onShutdown(stop: (signal: string) => Promise<void>): void {
  let stopping = false;
  const handler = (signal: string) => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => {
      process.stderr.write(`shutdown did not finish within ${HARD_EXIT_MS} ms; exiting\n`);
      process.exit(1);
    }, HARD_EXIT_MS).unref();
    stop(signal).then(
      () => process.exit(0),
      (err) => {
        process.stderr.write(`shutdown failed: ${String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => handler('SIGTERM'));
  process.on('SIGINT', () => handler('SIGINT'));
}
