// The server side of SCRAM-SHA-256 (RFC 5802, RFC 7677) as MongoDB runs it over saslStart and
// saslContinue. No channel binding; the password never crosses the wire nor is kept.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { CommandError } from './errors.ts';
import type { UserRecord, Users } from './users.ts';

export const MECHANISM = 'SCRAM-SHA-256';

function failed(): CommandError {
  return new CommandError('AuthenticationFailed', 'Authentication failed.');
}

function attributes(message: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of message.split(',')) {
    const eq = part.indexOf('=');
    if (eq === 1) out.set(part[0], part.slice(2));
  }
  return out;
}

function decodeUsername(name: string): string {
  return name.replace(/=2C/g, ',').replace(/=3D/g, '=');
}

export class ScramConversation {
  readonly #users: Users;
  #record: UserRecord | undefined;
  #clientFirstBare = '';
  #serverFirst = '';
  #gs2Header = '';
  #nonce = '';
  #done = false;

  constructor(users: Users) {
    this.#users = users;
  }

  /** Answers client-first-message with server-first-message. */
  start(payload: Buffer): Buffer {
    const message = payload.toString('utf8');
    // gs2-header: "n,," (no channel binding) or "y,," (client could but server does not).
    const match = /^([ny]),(a=[^,]*)?,(.*)$/.exec(message);
    if (!match) throw failed();
    this.#gs2Header = message.slice(0, message.length - match[3].length);
    this.#clientFirstBare = match[3];
    const attrs = attributes(this.#clientFirstBare);
    const user = attrs.get('n');
    const clientNonce = attrs.get('r');
    if (!user || !clientNonce) throw failed();
    this.#record = this.#users.lookup(decodeUsername(user));
    if (!this.#record) throw failed();
    this.#nonce = clientNonce + randomBytes(24).toString('base64');
    this.#serverFirst = `r=${this.#nonce},s=${this.#record.salt},i=${this.#record.iterations}`;
    return Buffer.from(this.#serverFirst, 'utf8');
  }

  /** Checks client-final-message's proof; answers server-final-message and the user. */
  finish(payload: Buffer): { payload: Buffer; user: UserRecord } {
    const record = this.#record;
    if (!record || this.#done) throw failed();
    this.#done = true;
    const message = payload.toString('utf8');
    const proofAt = message.lastIndexOf(',p=');
    if (proofAt < 0) throw failed();
    const withoutProof = message.slice(0, proofAt);
    const attrs = attributes(withoutProof);
    if (attrs.get('c') !== Buffer.from(this.#gs2Header, 'utf8').toString('base64') || attrs.get('r') !== this.#nonce) throw failed();
    const proof = Buffer.from(message.slice(proofAt + 3), 'base64');
    const authMessage = `${this.#clientFirstBare},${this.#serverFirst},${withoutProof}`;
    const storedKey = Buffer.from(record.storedKey, 'base64');
    const signature = createHmac('sha256', storedKey).update(authMessage).digest();
    if (proof.length !== signature.length) throw failed();
    const clientKey = Buffer.alloc(signature.length);
    for (let i = 0; i < signature.length; i++) clientKey[i] = proof[i] ^ signature[i];
    if (!timingSafeEqual(createHash('sha256').update(clientKey).digest(), storedKey)) throw failed();
    const serverSignature = createHmac('sha256', Buffer.from(record.serverKey, 'base64')).update(authMessage).digest('base64');
    return { payload: Buffer.from(`v=${serverSignature}`, 'utf8'), user: record };
  }
}
