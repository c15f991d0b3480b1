// net.Server#listen as a promise: resolves once the socket is bound, rejects with the bind's error
// (EADDRINUSE, EACCES) instead of leaving it to an 'error' event nobody awaits.
import type { ListenOptions, Server } from 'node:net';

export const listening = (server: Server, options: ListenOptions): Promise<void> =>
  new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options, () => {
      server.off('error', reject);
      resolve();
    });
  });
