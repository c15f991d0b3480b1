// What the runtime under the service can do, where Node 24 and Deno 2.9 truly differ
// (docs/internals/design.md §7). The rest of the code asks these questions and never which runtime
// it runs on; docs/operate/deployment.md ("Under Deno") says what each answer changes.

const deno = process.versions.deno !== undefined;

/**
 * node:cluster works. Deno 2.9's starts the web processes, but in them a worker thread dies as it
 * starts ("process.connected is not supported in workers"), so the WAL checkpointer never runs, and
 * on SIGTERM the processes do not drain and are cut at the 28 s limit.
 */
export const clusterWorks = !deno;

/**
 * Listening sockets sharing a port (SO_REUSEPORT) each accept in their turn of the event loop:
 * libuv's accept-one-per-turn (src/http/listen.ts). Deno's event loop is not libuv's; Node refuses
 * reusePort off Linux.
 */
export const acceptSocketsShareAPort = !deno && process.platform === 'linux';

/** For messages: "Deno 2.9.5", "Node 24.21.0". */
export const runtimeName = deno ? `Deno ${process.versions.deno}` : `Node ${process.versions.node}`;
