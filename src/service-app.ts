// The service's HTTP app: what each capability serves (its surface.ts, src/capability.ts HttpSurface),
// in one list beside the composition root's (src/compose.ts). Only processes that serve HTTP import it.
import type Koa from 'koa';
import type { AppDeps } from './app-deps.ts';
import type { HttpSurface } from './capability.ts';
import { CAPABILITIES } from './compose.ts';
import { createApp } from './http/app.ts';
import { adminSurface } from './admin/surface.ts';
import { identitySurface } from './identity/surface.ts';
import { agentsSurface } from './agents/surface.ts';
import { policiesSurface } from './policies/surface.ts';
import { purchasesSurface } from './purchases/surface.ts';
import { receiptsSurface } from './receipts/surface.ts';
import { simulationsSurface } from './simulations/surface.ts';
import { webhooksSurface } from './webhooks/surface.ts';
import { mcpSurface } from './mcp/surface.ts';
import { dashboardSurface } from './dashboard/surface.ts';

/**
 * In this order middleware runs and routers are mounted (identity authenticates /v1 before policies
 * refuses authoring there).
 */
export const SURFACES: readonly HttpSurface[] = [
  adminSurface,
  identitySurface,
  agentsSurface,
  policiesSurface,
  purchasesSurface,
  receiptsSurface,
  simulationsSurface,
  webhooksSurface,
  mcpSurface,
  dashboardSurface,
];

/** The service's Koa application. */
export const serviceApp = (deps: AppDeps): Koa => createApp(deps, CAPABILITIES, SURFACES);
