// GET /metrics of the worker process (METRICS_PORT): the jobs' metrics are counted where the jobs run,
// and the worker serves no other HTTP. Plain node:http, so the worker still loads no Koa or routes
// (test/worker/jobs-graph.test.ts). The same bearer token as the web processes' /metrics.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../log.ts';
import { listening } from '../listening.ts';
import { registry, renderMetrics } from '../metrics/metrics.ts';
import { METRICS_CHALLENGE, metricsBearer } from '../metrics/token.ts';

const error = (code: string, message: string) => JSON.stringify({ error: { code, message } });

/** Serves GET /metrics on `port` (0: any free port, logged); returns how to stop it. */
export async function serveWorkerMetrics(config: { metricsPort: number; metricsToken: string | null }, log: Logger): Promise<() => Promise<void>> {
  const allowed = metricsBearer(config.metricsToken);
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (allowed === null || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'application/json' }).end(error('not_found', 'The worker serves GET /metrics only, and only when METRICS_TOKEN is set.'));
    } else if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { 'content-type': 'application/json', allow: 'GET, HEAD' }).end(error('method_not_allowed', 'GET /metrics.'));
    } else {
      const refusal = allowed(req);
      if (refusal !== null) {
        res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': METRICS_CHALLENGE }).end(error('unauthorized', refusal));
        return;
      }
      renderMetrics().then(
        (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(req.method === 'HEAD' ? undefined : text),
        (err: unknown) => {
          log.error('could not render the metrics', { err: String(err) });
          res.writeHead(500, { 'content-type': 'application/json' }).end(error('internal_error', 'The metrics could not be rendered.'));
        },
      );
    }
  });
  // A scrape is one short request: a connection that sends nothing is not kept.
  server.headersTimeout = 10_000;
  server.requestTimeout = 10_000;
  await listening(server, { port: config.metricsPort });
  log.info('metrics listening', { port: (server.address() as AddressInfo).port });
  return () => new Promise((resolve) => server.close(() => resolve()).closeAllConnections());
}
