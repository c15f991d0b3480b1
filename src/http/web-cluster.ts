// WEB_CONCURRENCY (the Heroku convention): the primary process forks that many web processes with
// node:cluster; they share the listening port (the primary hands out connections round-robin) and
// each runs the whole application. The primary only supervises: it replaces a process that dies
// unexpectedly (not more than RESTART_LIMIT times a minute; not one of the first that exits before it
// has started: that is a start that failed, and the primary exits 1), and on SIGTERM/SIGINT passes the signal on,
// waits for every process to finish its own graceful shutdown, then exits.
import cluster, { type Worker } from 'node:cluster';
import { storeIsPrivate, type Config } from '../config.ts';
import { createLogger } from '../log.ts';
import { clusterWorks, runtimeName } from '../runtime.ts';

const RESTART_LIMIT = 10;

/**
 * In the environment of the one web process that runs the jobs (when RUN_JOBS) and the wire-protocol
 * listener: the first, and whichever replaces it. Without it, after the first died nobody ran them.
 */
const LEAD_ENV = 'SPEND_CONTROL_WEB_LEAD';
/** What a web process tells its primary once it has started (listening, its jobs and listeners running). */
const STARTED = 'spend-control:started';

/** Whether this process runs the jobs and the wire-protocol listener: alone, or its cluster's lead. */
export const isLeadProcess = (): boolean => cluster.isPrimary || process.env[LEAD_ENV] === '1';

/** Tells the primary this web process has started (nothing outside a cluster). */
export function reportStarted(): void {
  if (cluster.isWorker) process.send?.(STARTED);
}

export interface ClusterLog {
  info(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export function runWebCluster(count: number, log: ClusterLog): void {
  let stopping = false;
  const restarts: number[] = [];
  // One of the first web processes that exits before it has started is a start that failed (a port
  // taken, an unusable DATA_DIR): its replacements would fail alike, so the primary stops rather than
  // restart it ten times.
  const firsts = new Set<Worker>();
  const started = new WeakSet<Worker>();
  let lead: Worker | undefined;
  const fork = (asLead: boolean): Worker => {
    const worker = cluster.fork(asLead ? { [LEAD_ENV]: '1' } : {});
    if (asLead) lead = worker;
    return worker.on('message', (message) => {
      if (message === STARTED) started.add(worker);
    });
  };

  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(exitCode);
      return;
    }
    log.error('web process exited', { pid: worker.process.pid, code, signal });
    if (firsts.has(worker) && !started.has(worker)) {
      log.error('a web process failed to start; stopping', { code });
      stop('SIGTERM', 1);
      return;
    }
    const now = Date.now();
    while (restarts.length > 0 && restarts[0] < now - 60_000) restarts.shift();
    if (restarts.length >= RESTART_LIMIT) {
      log.error('web processes keep exiting; giving up', { restarts: restarts.length });
      stop('SIGTERM', 1);
      return;
    }
    restarts.push(now);
    fork(worker === lead);
  });

  let exitCode = 0;
  function stop(signal: NodeJS.Signals, code = 0): void {
    if (stopping) return;
    stopping = true;
    exitCode = code;
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
    if (workers.length === 0) process.exit(exitCode);
    log.info('stopping web processes', { signal, count: workers.length });
    for (const worker of workers) worker.process.kill(signal);
  }
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  for (let i = 0; i < count; i++) firsts.add(fork(i === 0));
  log.info('web processes started', { count });
}

/**
 * The primary's whole life with WEB_CONCURRENCY above 1: refuse a store the processes cannot share
 * (an in-memory embedded database; a DATA_DIR on disk is shared through SQLite's locks),
 * else start and supervise them. Never resolves; the process exits when its web processes have.
 */
export function superviseWebProcesses(config: Config): Promise<never> {
  if (storeIsPrivate(config)) {
    // Each process would hold its own in-memory database: purchases and budgets would split between them.
    process.stderr.write(
      `WEB_CONCURRENCY=${config.webConcurrency} needs a store the web processes share: a DATA_DIR on disk (the default ./data) or MONGODB_URI, not DATA_DIR=:memory:.\n`,
    );
    process.exit(2);
  }
  if (!clusterWorks) {
    process.stderr.write(
      `WEB_CONCURRENCY=${config.webConcurrency} needs node:cluster, which this runtime (${runtimeName}) does not run whole: leave WEB_CONCURRENCY at 1 and start one process per port (docs/operate/deployment.md).\n`,
    );
    process.exit(2);
  }
  runWebCluster(config.webConcurrency, createLogger(config.logLevel));
  return new Promise<never>(() => {});
}
