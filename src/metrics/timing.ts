// Server-Timing for decision responses (docs/operate/observability.md): `engine` is the pure evaluation,
// `store` the rest of the command or query around it (reads, the transaction, retries), `total`
// the whole request. Measurements attach to the request through AsyncLocalStorage.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Context, Next } from 'koa';

const current = new AsyncLocalStorage<{ engine: number }>();

/** Runs the engine and adds its time to the current request's `engine` entry. */
export function timeEngine<T>(fn: () => T): T {
  const record = current.getStore();
  if (!record) return fn();
  const started = performance.now();
  try {
    return fn();
  } finally {
    record.engine += performance.now() - started;
  }
}

const ms = (value: number) => value.toFixed(1);

/** Route middleware placed just before a decision handler; sets the header on its success. */
export async function serverTiming(ctx: Context, next: Next): Promise<void> {
  const record = { engine: 0 };
  const started = performance.now();
  await current.run(record, next);
  const now = performance.now();
  const receivedAt = (ctx.state.receivedAt as number | undefined) ?? started;
  ctx.set(
    'Server-Timing',
    `engine;dur=${ms(record.engine)};desc="decision engine", store;dur=${ms(Math.max(0, now - started - record.engine))};desc="store and command", total;dur=${ms(now - receivedAt)}`,
  );
}
