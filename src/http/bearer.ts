// The bearer credential of a request, read in this one place for every surface that takes one: /v1 and
// /mcp (docs/reference/contract.md §5), /admin (ADMIN_TOKEN) and /metrics (METRICS_TOKEN), the worker's
// too. Plain node:http types only, so the worker can use it without loading Koa.
//
// Authorization is not a list header: Node keeps the first of repeated lines and drops the rest, and a
// proxy that reads the last would disagree with us about who is calling. More than one line is refused
// on every surface with that surface's 401 (docs/reference/decisions.md), whatever the lines carry.
import type { IncomingMessage } from 'node:http';

export type Bearer =
  | { kind: 'bearer'; credential: string }
  /** No Authorization line, or one that is not `Bearer <credential>`. */
  | { kind: 'none' }
  /** More than one Authorization line. */
  | { kind: 'repeated' };

export const REPEATED_AUTHORIZATION = 'Authorization is sent on more than one header line; send one credential, once.';

export function bearerOf(req: IncomingMessage): Bearer {
  // headersDistinct keeps every line (built from rawHeaders), where headers.authorization has only the first.
  const lines = req.headersDistinct.authorization ?? [];
  if (lines.length > 1) return { kind: 'repeated' };
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(lines[0] ?? '');
  return match ? { kind: 'bearer', credential: match[1] } : { kind: 'none' };
}
