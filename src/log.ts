// Structured JSON logs, one object per line. Inside a request every line carries its request id,
// taken from AsyncLocalStorage so callers never thread it through.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { LogLevel } from './config.ts';

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };
const context = new AsyncLocalStorage<{ requestId: string }>();

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export const withRequestId = <T>(requestId: string, fn: () => T): T => context.run({ requestId }, fn);

export function createLogger(level: LogLevel, write: (line: string) => void = (l) => process.stdout.write(l + '\n')): Logger {
  const threshold = ORDER[level];
  const emit = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[lvl] < threshold) return;
    const requestId = context.getStore()?.requestId;
    write(JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...(requestId ? { requestId } : {}), ...fields }));
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
  };
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
