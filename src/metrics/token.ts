// Who may read /metrics: the bearer of METRICS_TOKEN, compared in constant time (by digest, so the
// comparison does not depend on the length of what was sent either).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { bearerOf, REPEATED_AUTHORIZATION } from '../http/bearer.ts';

const digest = (text: string) => createHash('sha256').update(text).digest();

export const METRICS_CHALLENGE = 'Bearer realm="metrics"';
const METRICS_REFUSAL = 'Send Authorization: Bearer $METRICS_TOKEN.';

/**
 * A check of a request's Authorization against the token: null when it may read the metrics, else the
 * message of the 401. The checker itself is null when there is no token (no /metrics at all).
 */
export function metricsBearer(token: string | null): ((req: IncomingMessage) => string | null) | null {
  if (token === null) return null;
  const expected = digest(token);
  return (req) => {
    const bearer = bearerOf(req);
    if (bearer.kind === 'repeated') return REPEATED_AUTHORIZATION;
    return bearer.kind === 'bearer' && timingSafeEqual(digest(bearer.credential), expected) ? null : METRICS_REFUSAL;
  };
}
