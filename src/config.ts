// Configuration comes from the environment only, checked once at start (DESIGN.md 6a: composition root).
// A bad value stops the process with a message naming the variable.
import { parseEncryptionKey } from './webhooks/secrets.ts';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface Config {
  port: number;
  baseUrl: string;
  authUrl: string;
  mongodbUri: string | null;
  /** The embedded store's directory (DATA_DIR), or ':memory:'. */
  dataDir: string;
  /** The embedded store's SQLite synchronous level (SQLITE_SYNCHRONOUS). */
  sqliteSynchronous: 'NORMAL' | 'FULL';
  /** Whether the web process runs the scheduled jobs too (RUN_JOBS; default: on the embedded store). */
  runJobs: boolean;
  adminToken: string | null;
  /** Raw WEBHOOK_ENCRYPTION_KEY (parsed by the webhook module), or null. */
  webhookEncryptionKey: string | null;
  webhookUnsafeAllowLocal: boolean;
  webhookEndpointLimit: number;
  nodeEnv: string;
  logLevel: LogLevel;
}

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
  return raw.replace(/\/+$/, '');
}

function flag(env: NodeJS.ProcessEnv, name: string, fallback = false): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === '0' || raw === 'false') return false;
  if (raw === '1' || raw === 'true') return true;
  throw new ConfigError(name, `must be 1/true or 0/false, got ${JSON.stringify(raw)}`);
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = integer(env, 'PORT', 3000, 0, 65535);
  const baseUrl = url(env, 'BASE_URL', `http://localhost:${port}`);
  const nodeEnv = env.NODE_ENV || 'development';
  const logLevel = (env.LOG_LEVEL || 'info') as LogLevel;
  if (!LEVELS.includes(logLevel)) throw new ConfigError('LOG_LEVEL', `must be one of ${LEVELS.join(', ')}`);
  const adminToken = env.ADMIN_TOKEN || null;
  if (adminToken !== null && adminToken.length < 24) {
    throw new ConfigError('ADMIN_TOKEN', 'must be at least 24 characters long');
  }
  const mongodbUri = env.MONGODB_URI || null;
  if (mongodbUri !== null && !/^mongodb(\+srv)?:\/\//.test(mongodbUri)) {
    throw new ConfigError('MONGODB_URI', 'must start with mongodb:// or mongodb+srv://');
  }
  const sqliteSynchronous = (env.SQLITE_SYNCHRONOUS || 'NORMAL').toUpperCase();
  if (sqliteSynchronous !== 'NORMAL' && sqliteSynchronous !== 'FULL') {
    throw new ConfigError('SQLITE_SYNCHRONOUS', `must be NORMAL or FULL, got ${JSON.stringify(env.SQLITE_SYNCHRONOUS)}`);
  }
  const webhookUnsafeAllowLocal = flag(env, 'WEBHOOK_UNSAFE_ALLOW_LOCAL');
  if (webhookUnsafeAllowLocal && nodeEnv === 'production') {
    throw new ConfigError('WEBHOOK_UNSAFE_ALLOW_LOCAL', 'is refused when NODE_ENV=production');
  }
  const webhookEncryptionKey = env.WEBHOOK_ENCRYPTION_KEY || null;
  if (webhookEncryptionKey !== null) {
    try {
      parseEncryptionKey(webhookEncryptionKey);
    } catch {
      throw new ConfigError('WEBHOOK_ENCRYPTION_KEY', 'must be 32 bytes written as 64 hex characters or base64 (e.g. `openssl rand -hex 32`)');
    }
  }
  return {
    port,
    baseUrl,
    authUrl: url(env, 'AUTH_URL', baseUrl),
    mongodbUri,
    dataDir: env.DATA_DIR || './data',
    sqliteSynchronous,
    runJobs: flag(env, 'RUN_JOBS', mongodbUri === null),
    adminToken,
    webhookEncryptionKey,
    webhookUnsafeAllowLocal,
    webhookEndpointLimit: integer(env, 'WEBHOOK_ENDPOINT_LIMIT', 16, 1, 1000),
    nodeEnv,
    logLevel,
  };
}
