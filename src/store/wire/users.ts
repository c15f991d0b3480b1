// The listener's two users: the service's (read and write) and a read-only analyst. Only SCRAM
// keys are kept (RFC 5802: salt, StoredKey, ServerKey), never a password, in DATA_DIR's
// mongo-users.json (mode 0600), or in memory when DATA_DIR is ':memory:'.
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

export type Role = 'readWrite' | 'read';

export const SERVICE_USER = 'service';
export const ANALYST_USER = 'analyst';
const ROLES: Record<string, Role> = { [SERVICE_USER]: 'readWrite', [ANALYST_USER]: 'read' };

/** MongoDB's default for SCRAM-SHA-256 (scramSHA256IterationCount). */
const ITERATIONS = 15_000;

export interface UserRecord {
  user: string;
  role: Role;
  salt: string;
  iterations: number;
  storedKey: string;
  serverKey: string;
}

export interface Users {
  lookup(user: string): UserRecord | undefined;
}

export function generatePassword(): string {
  // base64url is plain ASCII, which SASLprep leaves as it is: no normalisation step needed.
  return randomBytes(24).toString('base64url');
}

export function userRecord(user: string, password: string): UserRecord {
  const role = ROLES[user];
  if (!role) throw new Error(`unknown listener user ${user}: the users are ${Object.keys(ROLES).join(' and ')}`);
  const salt = randomBytes(28);
  const salted = pbkdf2Sync(password, salt, ITERATIONS, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  return {
    user,
    role,
    salt: salt.toString('base64'),
    iterations: ITERATIONS,
    storedKey: createHash('sha256').update(clientKey).digest('base64'),
    serverKey: createHmac('sha256', salted).update('Server Key').digest('base64'),
  };
}

export class MemoryUsers implements Users {
  readonly #records = new Map<string, UserRecord>();

  /** Sets a user's password; returns it for the caller to hand out. */
  set(user: string, password = generatePassword()): string {
    this.#records.set(user, userRecord(user, password));
    return password;
  }

  lookup(user: string): UserRecord | undefined {
    return this.#records.get(user);
  }
}

export function usersFilePath(dataDir: string): string {
  return join(dataDir, 'mongo-users.json');
}

/**
 * The users kept in a file. Re-read when it changes, so `npm run admin -- mongo-url` can set
 * a new password while the listener runs.
 */
export class FileUsers implements Users {
  readonly path: string;
  #mtimeMs = -1;
  #records = new Map<string, UserRecord>();

  constructor(path: string) {
    this.path = path;
  }

  /** Creates the file with both users (under passwords nobody knows yet) when it is missing. */
  ensure(): void {
    if (existsSync(this.path)) return;
    this.#write(Object.keys(ROLES).map((user) => userRecord(user, generatePassword())));
  }

  /** Gives a user a new password and returns it: the old one stops working. */
  rotate(user: string): string {
    this.ensure();
    const password = generatePassword();
    const others = this.#read().filter((r) => r.user !== user);
    this.#write([...others, userRecord(user, password)]);
    return password;
  }

  lookup(user: string): UserRecord | undefined {
    let mtimeMs: number;
    try {
      mtimeMs = statSync(this.path).mtimeMs;
    } catch {
      return undefined;
    }
    if (mtimeMs !== this.#mtimeMs) {
      this.#records = new Map(this.#read().map((r) => [r.user, r]));
      this.#mtimeMs = mtimeMs;
    }
    return this.#records.get(user);
  }

  #read(): UserRecord[] {
    const parsed = JSON.parse(readFileSync(this.path, 'utf8')) as { users?: UserRecord[] };
    return Array.isArray(parsed.users) ? parsed.users : [];
  }

  #write(records: UserRecord[]): void {
    mkdirSync(dirname(this.path), { recursive: true });
    const temporary = `${this.path}.${process.pid}.tmp`;
    writeFileSync(temporary, JSON.stringify({ users: records }, null, 2) + '\n', { mode: 0o600 });
    renameSync(temporary, this.path);
  }
}
