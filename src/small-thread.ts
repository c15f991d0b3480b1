// Worker threads with a small young generation, for the threads that allocate little (the WAL
// checkpointer). The web process runs with --max-semi-space-size=16 (package.json,
// Procfile): large semi-spaces let the request thread scavenge less often. V8 gives that flag
// precedence over a Worker's resourceLimits, so every thread would get a 32 MB young generation of
// its own, which it fills with garbage between scavenges: 30 MB of the soak's resident memory.
// V8 reads the flag when an isolate is created, so it is lowered while a thread starts and set back
// (to the value the process started with, or 0 for V8's default) once no such thread is still
// starting. Under Deno, whose process.execArgv is empty, a value given with --v8-flags is set back
// to V8's default.
import { setFlagsFromString } from 'node:v8';
import { Worker, type WorkerOptions } from 'node:worker_threads';

const THREAD_SEMI_SPACE_MB = 2;
let starting = 0;

/** The --max-semi-space-size this process was started with (0: V8's default). */
function processSemiSpaceMb(): number {
  // Node applies NODE_OPTIONS first, so the command line's value wins.
  const flags = [...(process.env.NODE_OPTIONS ?? '').split(/\s+/), ...process.execArgv].join(' ');
  const values = [...flags.matchAll(/--max[-_]semi[-_]space[-_]size=(\d+)/g)];
  return values.length ? Number(values[values.length - 1][1]) : 0;
}

function started(): void {
  if (--starting === 0) setFlagsFromString(`--max-semi-space-size=${processSemiSpaceMb()}`);
}

export function startSmallThread(url: URL, options: WorkerOptions = {}): Worker {
  if (starting++ === 0) setFlagsFromString(`--max-semi-space-size=${THREAD_SEMI_SPACE_MB}`);
  let thread: Worker;
  try {
    thread = new Worker(url, options);
  } catch (error) {
    started();
    throw error;
  }
  // 'online' comes once the thread's isolate exists; a thread that fails to start never sends it.
  const events = ['online', 'error', 'exit'] as const;
  const done = () => {
    for (const event of events) thread.off(event, done);
    started();
  };
  for (const event of events) thread.on(event, done);
  return thread;
}
