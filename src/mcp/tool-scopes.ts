// The scope each MCP tool needs (docs/reference/contract.md §4.19): read by routes.ts before the SDK is
// loaded, to answer a call the connection may not make with a 403 challenge naming the scope.
import type { Scope } from '../identity/auth.ts';

export const TOOL_SCOPES: Record<string, Scope> = {
  list_purchases: 'purchase:read',
  get_purchase: 'purchase:read',
  check_purchase: 'purchase:check',
  request_purchase: 'purchase:request',
};
