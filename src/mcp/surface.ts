// What MCP (the /mcp endpoint and its protected-resource metadata) contributes to the HTTP app (src/capability.ts HttpSurface).
import type { HttpSurface } from '../capability.ts';
import { mcpRoutes } from './routes.ts';
export const mcpSurface: HttpSurface = { name: 'mcp', routes: (deps) => [mcpRoutes(deps)] };
