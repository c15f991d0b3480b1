// Configuration comes from the environment only, checked once at start (docs/internals/design.md §6a: composition root).
// A bad value stops the process with a message naming the variable.
import { Duration } from 'luxon';
import { createPrivateKey } from 'node:crypto';
import { sha256Hex } from './digest.ts';
import { parseEncryptionKey } from './webhooks/secrets.ts';
import { DEFAULT_SCRYPT_N } from './identity/people/password.ts';

function isEd25519PrivateKey(pem: string): boolean {
  try {
    return createPrivateKey({ key: pem, format: 'pem' }).asymmetricKeyType === 'ed25519';
  } catch {
    return false;
  }
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface Config {
  port: number;
  /** JOBS_PROCESS_EVERY: how often the worker polls Agenda for due jobs, in milliseconds. */
  jobsProcessEveryMs: number;
  /**
   * TRUST_PROXY: the caller's address is the last X-Forwarded-For entry (one proxy in front appends it).
   * Off unless asked for: without a proxy in front the client writes that entry itself and would pick
   * the address the per-address limits count. The Procfile's `web` line turns it on.
   */
  trustProxy: boolean;
  /** WEB_CONCURRENCY: how many web processes `npm start` runs (node:cluster). */
  webConcurrency: number;
  baseUrl: string;
  authUrl: string;
  mongodbUri: string | null;
  /** The database on MONGODB_URI: MONGODB_DB, else the URI's path; never the driver's `test` default. */
  mongodbDb: string | null;
  /** The deadline of every MongoDB command (src/store/mongo.ts deadlineOptions), MONGODB_TIMEOUT_MS. */
  mongodbTimeoutMs: number;
  /** The embedded store's directory (DATA_DIR), or ':memory:'. */
  dataDir: string;
  /** The embedded store's SQLite synchronous level (SQLITE_SYNCHRONOUS). */
  sqliteSynchronous: 'NORMAL' | 'FULL';
  /** Whether the web process runs the scheduled jobs too (RUN_JOBS; default: on the embedded store). */
  runJobs: boolean;
  /** The SHA-256 digest (hex) of the operator API's token (ADMIN_TOKEN, or the generated one): the token itself is kept nowhere. */
  adminTokenSha256: string | null;
  /** Raw WEBHOOK_ENCRYPTION_KEY (parsed by the webhook module), or null. */
  webhookEncryptionKey: string | null;
  /**
   * DECISION_SIGNING_KEY: the Ed25519 private key (PKCS#8 PEM) that signs decision receipts, when the
   * operator keeps it (a secret manager) rather than the store; null: generated and sealed in the store.
   */
  decisionSigningKey: string | null;
  webhookUnsafeAllowLocal: boolean;
  webhookEndpointLimit: number;
  /** Webhook endpoints an organisation may create in a UTC day (WEBHOOK_CREATIONS_PER_DAY). */
  webhookCreationsPerDay: number;
  /**
   * WEBHOOK_ATTEMPT_LEASE: how long an attempt holds its delivery; a worker that dies mid-attempt loses it
   * after this. Above the 10 s request timeout, so a live attempt never loses it.
   */
  webhookAttemptLeaseMs: number;
  /** PASSWORD_SCRYPT_N: the scrypt cost new passwords are hashed at (a power of two; below 2^17 only in development and tests). */
  passwordScryptN: number;
  /** WEBHOOK_SWEEP_EVERY: how often due deliveries nobody is attempting (a dead worker's, say) are swept up. */
  webhookSweepEveryMs: number;
  /** REPLAY_INLINE_LIMIT: a replay of at most this many purchases answers in the request; a larger one runs as a job. */
  replayInlineLimit: number;
  nodeEnv: string;
  logLevel: LogLevel;
  /** Bearer token of GET /metrics; null turns the endpoint off. */
  metricsToken: string | null;
  /** METRICS_PORT: where the worker process serves GET /metrics (it serves no other HTTP); null: nowhere. */
  metricsPort: number | null;
  /** The embedded store's MongoDB wire-protocol listener: off (null) unless EMBEDDED_MONGO_PORT is set. */
  embeddedMongoPort: number | null;
  embeddedMongoHost: string;
  /** SMTP_URL and SMTP_FROM: where approvers' emails are sent from; null (unset) sends none. */
  smtp: SmtpConfig | null;
  /** APPROVAL_REMINDER_AT: when the one reminder of a pending approval goes out; null: never. */
  approvalReminder: ReminderSetting | null;
}

export interface SmtpConfig {
  /** smtp:// or smtps:// URL of the relay, credentials included (nodemailer's connection URL). */
  url: string;
  /** The From of every message: `Name <address>` or an address. */
  from: string;
}

/** When a fraction of the approval's time is left (0.25: the last quarter), or this long before it expires. */
export type ReminderSetting = { kind: 'FRACTION_LEFT'; fraction: number } | { kind: 'BEFORE_EXPIRY'; ms: number };

export class ConfigError extends Error {
  constructor(variable: string, problem: string) {
    super(`configuration: ${variable} ${problem}`);
    this.name = 'ConfigError';
  }
}


const LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got ${JSON.stringify(raw)}`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  return value;
}

const UNIT_MS = new Map(
  Object.entries({ ms: 1, millisecond: 1, milliseconds: 1, second: 1000, seconds: 1000, minute: 60_000, minutes: 60_000, hour: 3_600_000, hours: 3_600_000 }),
);

/** A duration such as `5 seconds`, `500 ms` or `1 minute` (a bare number is milliseconds), in milliseconds. */
function duration(env: NodeJS.ProcessEnv, name: string, fallback: number, minMs: number, maxMs: number): number {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  const m = /^(\d+)\s*([a-z]*)$/i.exec(raw);
  const unitMs = m ? UNIT_MS.get(m[2].toLowerCase() || 'ms') : undefined;
  if (!m || unitMs === undefined) throw new ConfigError(name, `must be a duration such as "5 seconds", "500 ms" or "1 minute", got ${JSON.stringify(raw)}`);
  const ms = Number(m[1]) * unitMs;
  if (ms < minMs || ms > maxMs) throw new ConfigError(name, `must be between ${minMs} ms and ${maxMs / 60_000} minutes, got ${ms} ms`);
  return ms;
}

function url(env: NodeJS.ProcessEnv, name: string, fallback: string): string {
  const raw = env[name] || fallback;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, `must be an absolute http(s) URL, got ${JSON.stringify(raw)}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ConfigError(name, `must use http or https, got ${parsed.protocol}`);
  }
  if (parsed.search || parsed.hash) throw new ConfigError(name, 'must not carry a query or fragment');
  if (parsed.username || parsed.password) throw new ConfigError(name, 'must not carry a user name or password');
  // The service answers at the root of its host: its pages, discovery documents and redirects name
  // root paths, so a prefix here would publish addresses it does not serve.
  if (parsed.pathname.replace(/\/+$/, '') !== '') throw new ConfigError(name, `must be an origin without a path (the service answers at the root of its host), got ${JSON.stringify(raw)}`);
  return raw.replace(/\/+$/, '');
}

/** SMTP_URL (smtp:// or smtps://) with SMTP_FROM; both unset: no email. */
function smtp(env: NodeJS.ProcessEnv): SmtpConfig | null {
  const raw = env.SMTP_URL?.trim();
  if (!raw) return null;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError('SMTP_URL', 'must be a URL such as smtp://user:password@mail.example.com:587 or smtps://mail.example.com');
  }
  if (parsed.protocol !== 'smtp:' && parsed.protocol !== 'smtps:') throw new ConfigError('SMTP_URL', `must use smtp or smtps, got ${parsed.protocol}`);
  if (!parsed.hostname) throw new ConfigError('SMTP_URL', 'must name the mail server');
  const from = env.SMTP_FROM?.trim();
  if (!from) throw new ConfigError('SMTP_FROM', 'must be set when SMTP_URL is: the address approvers\' emails come from, e.g. "Spend control <spend@example.com>"');
  // An address (local@domain), alone or in angle brackets after a display name; no line breaks (header injection).
  if (/[\r\n]/.test(from) || !/^(?:[^<>]*<[^<>\s@]+@[^<>\s@]+>|[^<>\s@]+@[^<>\s@]+)$/.test(from)) {
    throw new ConfigError('SMTP_FROM', `must be an address such as spend@example.com or "Spend control <spend@example.com>", got ${JSON.stringify(from)}`);
  }
  return { url: raw, from };
}

/**
 * APPROVAL_REMINDER_AT: a fraction of the approval's time still left (`0.25`, `25%`), an ISO 8601
 * duration before expiry (`PT1H`), or `off`. Default: when a quarter of the time is left.
 */
function reminder(env: NodeJS.ProcessEnv): ReminderSetting | null {
  const raw = env.APPROVAL_REMINDER_AT?.trim();
  if (!raw) return { kind: 'FRACTION_LEFT', fraction: 0.25 };
  if (/^(?:off|none|0)$/i.test(raw)) return null;
  const fraction = /^(0?\.\d+)$/.exec(raw)?.[1] ?? (/^(\d{1,2}(?:\.\d+)?)%$/.exec(raw) ? String(Number(raw.slice(0, -1)) / 100) : undefined);
  if (fraction !== undefined) {
    const value = Number(fraction);
    if (value > 0 && value < 1) return { kind: 'FRACTION_LEFT', fraction: value };
  }
  if (/^P/i.test(raw)) {
    const d = Duration.fromISO(raw.toUpperCase());
    if (d.isValid && d.toMillis() > 0) return { kind: 'BEFORE_EXPIRY', ms: d.toMillis() };
  }
  throw new ConfigError('APPROVAL_REMINDER_AT', `must be the share of the time left (0.25 or 25%), a duration before expiry (PT1H) or off, got ${JSON.stringify(raw)}`);
}

/** The database named by a connection string's path (`mongodb://host/NAME?...`), or null. */
export function databaseInUri(uri: string): string | null {
  const path = /^mongodb(?:\+srv)?:\/\/[^/?]*\/([^?]*)/.exec(uri)?.[1];
  if (!path) return null;
  try {
    return decodeURIComponent(path);
  } catch {
    throw new ConfigError('MONGODB_URI', 'has a database name that is not valid percent-encoding');
  }
}

// MongoDB's own rules for a database name: no /\. "$*<>:|? or whitespace, under 64 bytes.
const DB_NAME = /^[^/\\. "$*<>:|?\s]{1,63}$/;

function mongodbDatabase(env: NodeJS.ProcessEnv, uri: string | null): string | null {
  if (uri === null) return null;
  const named = env.MONGODB_DB || databaseInUri(uri);
  if (!named) {
    throw new ConfigError(
      'MONGODB_DB',
      'must be set: MONGODB_URI names no database and the driver would silently use one called "test". ' +
        'Set MONGODB_DB (e.g. MONGODB_DB=spend_control) or name it in the URI path (mongodb+srv://host/spend_control?...)',
    );
  }
  const variable = env.MONGODB_DB ? 'MONGODB_DB' : 'MONGODB_URI';
  if (!DB_NAME.test(named) || Buffer.byteLength(named) > 63) {
    throw new ConfigError(variable, `names the database ${JSON.stringify(named)}, which MongoDB does not allow (no /\\. "$*<>:|? or spaces, under 64 bytes)`);
  }
  return named;
}

function flag(env: NodeJS.ProcessEnv, name: string, fallback = false): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === '0' || raw === 'false') return false;
  if (raw === '1' || raw === 'true') return true;
  throw new ConfigError(name, `must be 1/true or 0/false, got ${JSON.stringify(raw)}`);
}

/**
 * The store lives in this process alone (the embedded engine on DATA_DIR=:memory:): no other process
 * or thread can open it, so nothing that needs a shared store (a second web process, the worker) can
 * run beside this one.
 */
export const storeIsPrivate = (config: Pick<Config, 'mongodbUri' | 'dataDir'>): boolean => config.mongodbUri === null && config.dataDir === ':memory:';

/**
 * A token clients send as `Authorization: Bearer <token>`: one that holds white space, a control character
 * or anything beyond ASCII could never be sent and matched (the header is one word, read as Latin-1), and
 * every call would be a 401 with the service apparently up.
 */
function bearerToken(env: NodeJS.ProcessEnv, name: string, minLength: number): string | null {
  const token = env[name] || null;
  if (token === null) return null;
  if (token.length < minLength) throw new ConfigError(name, `must be at least ${minLength} characters long`);
  if (!/^[\x21-\x7e]+$/.test(token)) throw new ConfigError(name, 'must be printable ASCII without spaces (it is sent as Authorization: Bearer <token>)');
  return token;
}

/** The NODE_ENV values under which the development switches may be turned on. */
const DEVELOPMENT_ENVIRONMENTS = ['development', 'test'];

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = integer(env, 'PORT', 3000, 0, 65535);
  const baseUrl = url(env, 'BASE_URL', `http://localhost:${port}`);
  const nodeEnv = env.NODE_ENV || 'development';
  const logLevel = (env.LOG_LEVEL || 'info') as LogLevel;
  if (!LEVELS.includes(logLevel)) throw new ConfigError('LOG_LEVEL', `must be one of ${LEVELS.join(', ')}`);
  const adminToken = bearerToken(env, 'ADMIN_TOKEN', 24);
  const mongodbUri = env.MONGODB_URI || null;
  if (mongodbUri !== null && !/^mongodb(\+srv)?:\/\//.test(mongodbUri)) {
    throw new ConfigError('MONGODB_URI', 'must start with mongodb:// or mongodb+srv://');
  }
  const mongodbDb = mongodbDatabase(env, mongodbUri);
  const sqliteSynchronous = (env.SQLITE_SYNCHRONOUS || 'NORMAL').toUpperCase();
  if (sqliteSynchronous !== 'NORMAL' && sqliteSynchronous !== 'FULL') {
    throw new ConfigError('SQLITE_SYNCHRONOUS', `must be NORMAL or FULL, got ${JSON.stringify(env.SQLITE_SYNCHRONOUS)}`);
  }
  const webhookUnsafeAllowLocal = flag(env, 'WEBHOOK_UNSAFE_ALLOW_LOCAL');
  // Allowed where development is named, not refused where production is: NODE_ENV=prod or staging
  // (a typo, or a name of the platform's) must not leave a deployment open to loopback receivers.
  if (webhookUnsafeAllowLocal && !DEVELOPMENT_ENVIRONMENTS.includes(nodeEnv)) {
    throw new ConfigError('WEBHOOK_UNSAFE_ALLOW_LOCAL', `is allowed only when NODE_ENV is unset, development or test (it is ${JSON.stringify(nodeEnv)})`);
  }
  const passwordScryptN = integer(env, 'PASSWORD_SCRYPT_N', DEFAULT_SCRYPT_N, 2 ** 10, 2 ** 20);
  if ((passwordScryptN & (passwordScryptN - 1)) !== 0) throw new ConfigError('PASSWORD_SCRYPT_N', `must be a power of two, got ${passwordScryptN}`);
  // Below OWASP's floor only where development is named, as WEBHOOK_UNSAFE_ALLOW_LOCAL: the tests hash many passwords.
  if (passwordScryptN < DEFAULT_SCRYPT_N && !DEVELOPMENT_ENVIRONMENTS.includes(nodeEnv)) {
    throw new ConfigError('PASSWORD_SCRYPT_N', `may be below ${DEFAULT_SCRYPT_N} only when NODE_ENV is unset, development or test (it is ${JSON.stringify(nodeEnv)})`);
  }
  const webhookEncryptionKey = env.WEBHOOK_ENCRYPTION_KEY || null;
  if (webhookEncryptionKey !== null) {
    try {
      parseEncryptionKey(webhookEncryptionKey);
    } catch {
      throw new ConfigError('WEBHOOK_ENCRYPTION_KEY', 'must be 32 bytes written as 64 hex characters or base64 (e.g. `openssl rand -hex 32`)');
    }
  }
  const decisionSigningKey = env.DECISION_SIGNING_KEY?.trim() ? env.DECISION_SIGNING_KEY.trim().replace(/\\n/g, '\n') : null;
  if (decisionSigningKey !== null && !isEd25519PrivateKey(decisionSigningKey)) {
    throw new ConfigError('DECISION_SIGNING_KEY', 'must be an Ed25519 private key in PKCS#8 PEM (e.g. `openssl genpkey -algorithm ed25519`); line breaks may be written as \\n');
  }
  const metricsToken = bearerToken(env, 'METRICS_TOKEN', 16);
  return {
    port,
    webConcurrency: integer(env, 'WEB_CONCURRENCY', 1, 1, 64),
    trustProxy: flag(env, 'TRUST_PROXY', false),
    jobsProcessEveryMs: duration(env, 'JOBS_PROCESS_EVERY', 5_000, 100, 3_600_000),
    baseUrl,
    authUrl: url(env, 'AUTH_URL', baseUrl),
    mongodbUri,
    mongodbDb,
    mongodbTimeoutMs: integer(env, 'MONGODB_TIMEOUT_MS', 10_000, 100, 600_000),
    dataDir: env.DATA_DIR || './data',
    sqliteSynchronous,
    runJobs: flag(env, 'RUN_JOBS', mongodbUri === null),
    adminTokenSha256: adminToken === null ? null : sha256Hex(adminToken),
    webhookEncryptionKey,
    decisionSigningKey,
    webhookUnsafeAllowLocal,
    webhookEndpointLimit: integer(env, 'WEBHOOK_ENDPOINT_LIMIT', 16, 1, 1000),
    webhookCreationsPerDay: integer(env, 'WEBHOOK_CREATIONS_PER_DAY', 50, 1, 100_000),
    webhookAttemptLeaseMs: duration(env, 'WEBHOOK_ATTEMPT_LEASE', 60_000, 15_000, 3_600_000),
    passwordScryptN,
    webhookSweepEveryMs: duration(env, 'WEBHOOK_SWEEP_EVERY', 60_000, 100, 3_600_000),
    replayInlineLimit: integer(env, 'REPLAY_INLINE_LIMIT', 5000, 0, 1_000_000),
    nodeEnv,
    logLevel,
    metricsToken,
    metricsPort: env.METRICS_PORT ? integer(env, 'METRICS_PORT', 0, 0, 65535) : null,
    embeddedMongoPort: env.EMBEDDED_MONGO_PORT ? integer(env, 'EMBEDDED_MONGO_PORT', 0, 1, 65535) : null,
    embeddedMongoHost: env.EMBEDDED_MONGO_HOST || '127.0.0.1',
    smtp: smtp(env),
    approvalReminder: reminder(env),
  };
}
