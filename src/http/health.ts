// Probes (docs/operate/observability.md). /health/live: the process answers. /health/ready: the store answers a
// round trip within READY_DEADLINE_MS, the jobs run if this process runs them, the process is not
// shutting down, and the store's last write did not fail for lack of space, or has succeeded since
// (src/store/storage-space.ts); a platform routes traffic only to ready processes. /health stays as it was.
import type Router from '@koa/router';
import { newRouter } from './router.ts';
import type { Context, Next } from 'koa';
import type { AppDeps } from '../app-deps.ts';
import { isStorageFull } from '../store/store.ts';
import { storageSpace } from '../store/storage-space.ts';
import { LIMITS } from './body.ts';
import { newLifecycle } from '../lifecycle.ts';

export const READY_DEADLINE_MS = 2000;

/** While stopping, every answer (the ones in flight included) closes its connection. */
export const closeWhenStopping = (deps: AppDeps) => async (ctx: Context, next: Next) => {
  try {
    await next();
  } finally {
    if (deps.lifecycle?.stopping) ctx.set('Connection', 'close');
  }
};

/** Where readiness writes while the storage is marked full: one document, replaced each time. */
export const STORAGE_PROBE_COLLECTION = 'readiness_probes';

async function storeRoundTrip(deps: AppDeps): Promise<{ ok: boolean; ms: number; error?: string }> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${READY_DEADLINE_MS} ms`)), READY_DEADLINE_MS);
  });
  const space = storageSpace(deps.store);
  try {
    await Promise.race([deps.store.db.collection('organizations').findOne({ _id: 'readiness-probe' as never }, { projection: { _id: 1 } }), deadline]);
    if (space.fullSince !== null) {
      // A write of a purchase's largest body: if that finds space, so does a submission.
      const probe = { _id: 'storage', at: new Date(), padding: 'x'.repeat(LIMITS.standard) };
      await Promise.race([deps.store.db.collection(STORAGE_PROBE_COLLECTION).replaceOne({ _id: 'storage' as never }, probe, { upsert: true }), deadline]);
      space.fullSince = null;
    }
    return { ok: true, ms: Math.round(performance.now() - started) };
  } catch (err) {
    const full = isStorageFull(err);
    return { ok: false, ms: Math.round(performance.now() - started), error: full ? `storage full since ${new Date(space.fullSince!).toISOString()}` : err instanceof Error ? err.message : String(err) };
  } finally {
    clearTimeout(timer);
  }
}

export function healthRoutes(deps: AppDeps): Router {
  const router = newRouter();
  router.get('/health', (ctx) => {
    ctx.body = { status: 'ok', store: deps.store.engine };
  });
  router.get('/health/live', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/health/ready', async (ctx) => {
    const lifecycle = deps.lifecycle ?? newLifecycle(false);
    const store = await storeRoundTrip(deps);
    const jobs = lifecycle.runsJobs ? { ok: lifecycle.jobsRunning, where: 'this process' } : { ok: true, where: 'another process' };
    const ready = store.ok && jobs.ok && !lifecycle.stopping;
    ctx.status = ready ? 200 : 503;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { status: ready ? 'ready' : lifecycle.stopping ? 'stopping' : 'unavailable', store: { engine: deps.store.engine, ...store }, jobs };
  });
  return router;
}
