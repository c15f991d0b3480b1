// What receipts contribute to the HTTP app (src/capability.ts HttpSurface).
import type { HttpSurface } from '../capability.ts';
import { receiptRoutes } from './routes.ts';
export const receiptsSurface: HttpSurface = { name: 'receipts', routes: (deps) => [receiptRoutes(deps)] };
