// Who may read /metrics: the bearer of METRICS_TOKEN, compared in constant time (by digest, so the
// comparison does not depend on the length of what was sent either).
import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (text: string) => createHash('sha256').update(text).digest();

/** A check of an Authorization header against the token; null when there is no token (no /metrics at all). */
export function metricsBearer(token: string | null): ((authorization: string | undefined) => boolean) | null {
  if (token === null) return null;
  const expected = digest(token);
  return (authorization) => {
    const match = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization ?? '');
    return match !== null && timingSafeEqual(digest(match[1]), expected);
  };
}

export const METRICS_CHALLENGE = 'Bearer realm="metrics"';
export const METRICS_REFUSAL = 'Send Authorization: Bearer $METRICS_TOKEN.';
