// The HTTP server around the Koa app, with deliberate timeouts (docs/operate/deployment.md), so a client that
// stalls cannot hold a connection for Node's default 300 s. A request whose headers or body do not
// arrive in time is answered 408 with docs/reference/contract.md §7's error body (`request_timeout`, an addition), and
// unparseable HTTP with 400 `invalid_request`, instead of Node's bare plain-text answers.
import { createServer, type IncomingMessage, type Server } from 'node:http';
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

type Issue = { path: string; code: string; message: string };

const errorBody = (code: string, message: string, issues?: Issue[]) => JSON.stringify({ error: { code, message, ...(issues ? { issues } : {}) } });

function errorResponse(status: number, reason: string, code: string, message: string, issues?: Issue[]): string {
  const body = errorBody(code, message, issues);
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

/**
 * RFC 9112 3.2: an HTTP/1.1 request carries exactly one Host line, or is 400. Node's own check (requireHostHeader)
 * answers a missing one with a bare 400 without the error body, and lets two through.
 */
function hostLines(req: IncomingMessage): number {
  let lines = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i].toLowerCase() === 'host') lines++;
  return lines;
}

/** The server main.ts and the tests listen with: the app's handler plus the timeouts above. */
export function createHttpServer(app: Koa, timeouts: ServerTimeouts = SERVER_TIMEOUTS): Server {
  const handle = app.callback();
  const server = createServer(
    {
      headersTimeout: timeouts.headersTimeoutMs,
      requestTimeout: timeouts.requestTimeoutMs,
      keepAliveTimeout: timeouts.keepAliveTimeoutMs,
      connectionsCheckingInterval: timeouts.checkIntervalMs,
      requireHostHeader: false,
    },
    (req, res) => {
      if (req.httpVersion !== '1.1' || hostLines(req) === 1) return handle(req, res);
      const body = errorBody('invalid_request', 'The request is not valid HTTP.', [
        { path: '', code: 'MALFORMED_HTTP', message: 'An HTTP/1.1 request carries one Host header.' },
      ]);
      res.shouldKeepAlive = false;
      res.writeHead(400, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body) }).end(body);
    },
  );
  server.on('clientError', answerClientError);
  return server;
}
