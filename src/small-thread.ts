// Worker threads with a small young generation, for the threads that allocate little (the jobs
// thread, the WAL checkpointer). The web process runs with --max-semi-space-size=16 (package.json,
// Procfile): large semi-spaces let the request thread scavenge less often. V8 gives that flag
// precedence over a Worker's resourceLimits, so every thread would get a 32 MB young generation of
// its own, which it fills with garbage between scavenges: 30 MB of the soak's resident memory.
// V8 reads the flag when an isolate is created, so it is lowered while a thread starts and set back
// (to the command line's value, or 0 for V8's default) once no such thread is still starting.
import { setFlagsFromString } from 'node:v8';
import { Worker, type WorkerOptions } from 'node:worker_threads';

const THREAD_SEMI_SPACE_MB = 2;
let starting = 0;

/** The --max-semi-space-size this process was started with (0: V8's default). */
function processSemiSpaceMb(): number {
  const flags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].join(' ');
  const values = [...flags.matchAll(/--max[-_]semi[-_]space[-_]size[= ](\d+)/g)];
  return values.length ? Number(values[values.length - 1][1]) : 0;
}

export function startSmallThread(url: URL, options: WorkerOptions = {}): Worker {
  if (starting++ === 0) setFlagsFromString(`--max-semi-space-size=${THREAD_SEMI_SPACE_MB}`);
  const thread = new Worker(url, options);
  let started = false;
  const done = () => {
    if (started) return;
    started = true;
    if (--starting === 0) setFlagsFromString(`--max-semi-space-size=${processSemiSpaceMb()}`);
  };
  // 'online' comes once the thread's isolate exists; a thread that fails to start never sends it.
  thread.once('online', done).once('error', done).once('exit', done);
  return thread;
}
