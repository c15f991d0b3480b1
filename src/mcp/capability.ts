// What MCP contributes: the /mcp endpoint and its protected-resource metadata.
import type { Capability } from '../capability.ts';
import { mcpRoutes } from './routes.ts';

export const mcp: Capability = { name: 'mcp', routes: (deps) => [mcpRoutes(deps)] };
