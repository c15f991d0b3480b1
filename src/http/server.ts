// The HTTP server around the Koa app, with deliberate timeouts (docs/operate/deployment.md), so a client that
// stalls cannot hold a connection for Node's default 300 s. A request whose headers or body do not
// arrive in time is answered 408 with docs/reference/contract.md §7's error body (`request_timeout`, an addition), and
// unparseable HTTP with 400 `invalid_request`, instead of Node's bare plain-text answers.
import { createServer, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type Koa from 'koa';

export interface ServerTimeouts {
  /** The request line and headers must arrive within this. */
  headersTimeoutMs: number;
  /** The whole request, headers and body, must arrive within this. */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** How often Node checks the two above. */
  checkIntervalMs: number;
}

export const SERVER_TIMEOUTS: ServerTimeouts = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  checkIntervalMs: 1_000,
};

function errorResponse(status: number, reason: string, code: string, message: string, issues?: { path: string; code: string; message: string }[]): string {
  const body = JSON.stringify({ error: { code, message, ...(issues ? { issues } : {}) } });
  return (
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  );
}

function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  // Answer only where nothing of a response has been written yet, as Node's own handler does.
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (!socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  if (err.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const response =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? errorResponse(408, 'Request Timeout', 'request_timeout', 'The request did not arrive in time; send it again.')
      : errorResponse(400, 'Bad Request', 'invalid_request', 'The request is not valid HTTP.', [
          { path: '', code: err.code === 'HPE_HEADER_OVERFLOW' ? 'HEADERS_TOO_LARGE' : 'MALFORMED_HTTP', message: 'The request line or headers could not be read.' },
        ]);
  socket.end(response);
}

/** The server main.ts and the tests listen with: the app's handler plus the timeouts above. */
export function createHttpServer(app: Koa, timeouts: ServerTimeouts = SERVER_TIMEOUTS): Server {
  const server = createServer(
    {
      headersTimeout: timeouts.headersTimeoutMs,
      requestTimeout: timeouts.requestTimeoutMs,
      keepAliveTimeout: timeouts.keepAliveTimeoutMs,
      connectionsCheckingInterval: timeouts.checkIntervalMs,
    },
    app.callback(),
  );
  server.on('clientError', answerClientError);
  return server;
}
