// UUIDv7 for things that sort by creation time (purchases, decisions, events: docs/reference/contract.md §2.1),
// UUIDv4 elsewhere, UUIDv5 for a thing known by a name. All are bare UUIDs with no prefix.
import { randomFillSync, randomUUID } from 'node:crypto';
import { v5, validate } from 'uuid';

// Random bytes are drawn from the CSPRNG in blocks of 256 ids rather than one call per id: a decision
// makes several ids, and a call into the CSPRNG per id cost more than the rest of the id (the same
// pooling Node does for randomUUID).
const POOL_BYTES = 16 * 256;
const pool = new Uint8Array(POOL_BYTES);
let poolAt = POOL_BYTES;
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

// Monotonic within this process, as RFC 9562 6.2 method 1 describes: a 32-bit counter seeded randomly
// each millisecond and incremented for each further id in that millisecond (the layout the `uuid`
// package uses). On overflow the timestamp moves on by one.
let lastMs = -1;
let seq = 0;

/** A UUIDv7: 48-bit Unix milliseconds, then a counter and random bits (RFC 9562). */
export function newId(): string {
  if (poolAt === POOL_BYTES) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const r = poolAt;
  poolAt += 16;
  const now = Date.now();
  if (now > lastMs) {
    seq = ((pool[r + 6] & 0x7f) << 24) | (pool[r + 7] << 16) | (pool[r + 8] << 8) | pool[r + 9];
    lastMs = now;
  } else {
    seq = (seq + 1) | 0;
    if (seq === 0) lastMs++;
  }
  const ms = lastMs;
  return (
    HEX[(ms / 0x10000000000) & 0xff] + HEX[(ms / 0x100000000) & 0xff] + HEX[(ms / 0x1000000) & 0xff] + HEX[(ms / 0x10000) & 0xff] +
    '-' + HEX[(ms / 0x100) & 0xff] + HEX[ms & 0xff] +
    '-' + HEX[0x70 | ((seq >>> 28) & 0x0f)] + HEX[(seq >>> 20) & 0xff] +
    '-' + HEX[0x80 | ((seq >>> 14) & 0x3f)] + HEX[(seq >>> 6) & 0xff] +
    '-' + HEX[((seq << 2) & 0xff) | (pool[r + 10] & 0x03)] + HEX[pool[r + 11]] + HEX[pool[r + 12]] + HEX[pool[r + 13]] + HEX[pool[r + 14]] + HEX[pool[r + 15]]
  );
}

export const newRandomId = (): string => randomUUID();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID.test(value) && validate(value);

/** The namespace of this service's name-based UUIDs (RFC 9562 5.5); fixed, so a name's UUID never changes. */
const NAME_NAMESPACE = '3f6f1d2a-8c4e-4b7a-9d15-6e2f0c8a71b4';

/** The UUID of a thing identified by a name (a budget window by policy, currency and period): always the same for the name. */
export const uuidForName = (name: string): string => v5(name, NAME_NAMESPACE);
