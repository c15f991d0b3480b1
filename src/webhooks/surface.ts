// What webhooks contribute to the HTTP app (src/capability.ts HttpSurface).
import type { HttpSurface } from '../capability.ts';
import { webhookRoutes } from './routes.ts';
export const webhooksSurface: HttpSurface = { name: 'webhooks', routes: (deps) => [webhookRoutes(deps)] };
