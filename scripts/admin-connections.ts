// Operator CLI functions for people's passwords and connections, over the /admin API
// (src/identity/oauth/admin-routes.ts). scripts/admin.ts calls these; each returns the parsed JSON body and
// throws AdminCallError with the service's error body when the call fails.

export interface AdminApi {
  /** e.g. http://localhost:3000 */
  baseUrl: string;
  adminToken: string;
  fetch?: typeof fetch;
}

export class AdminCallError extends Error {
  readonly status: number;
  readonly body: unknown;
  constructor(status: number, body: unknown) {
    super(`the service answered ${status}: ${JSON.stringify(body)}`);
    this.name = 'AdminCallError';
    this.status = status;
    this.body = body;
  }
}

async function call(api: AdminApi, method: string, path: string, body?: unknown): Promise<any> {
  const headers: Record<string, string> = { authorization: `Bearer ${api.adminToken}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await (api.fetch ?? fetch)(api.baseUrl.replace(/\/+$/, '') + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  if (!res.ok) throw new AdminCallError(res.status, parsed);
  return parsed;
}

/** PUT /admin/people/{personId}/password. The password is at least 12 characters. */
export function setPersonPassword(api: AdminApi, personId: string, password: string) {
  return call(api, 'PUT', `/admin/people/${encodeURIComponent(personId)}/password`, { password });
}

/** GET /admin/connections?organizationId= : newest first, revoked ones included. */
export function listConnections(api: AdminApi, organizationId: string) {
  return call(api, 'GET', `/admin/connections?organizationId=${encodeURIComponent(organizationId)}`);
}

/** DELETE /admin/connections/{connectionId}: revokes it (idempotent); effective on the next call. */
export function revokeConnection(api: AdminApi, connectionId: string) {
  return call(api, 'DELETE', `/admin/connections/${encodeURIComponent(connectionId)}`);
}

/** GET /admin/oauth-clients: clients registered through Dynamic Client Registration, newest first. */
export function listOAuthClients(api: AdminApi) {
  return call(api, 'GET', '/admin/oauth-clients');
}

/** DELETE /admin/oauth-clients/{id}: the registration stops working and its connections are revoked. */
export function revokeOAuthClient(api: AdminApi, id: string) {
  return call(api, 'DELETE', `/admin/oauth-clients/${encodeURIComponent(id)}`);
}

/** One line per registered client, for people at a terminal. */
export function formatOAuthClients(body: { clients: Array<Record<string, any>> }): string {
  if (body.clients.length === 0) return 'No registered clients.';
  return body.clients
    .map((c) =>
      [
        c.id,
        c.revokedAt ? `REVOKED ${c.revokedAt}` : c.lastConnectedAt ? `CONNECTED ${c.lastConnectedAt}` : `UNUSED until ${c.expiresAt}`,
        `${c.clientName ?? '(no name)'} (unverified)`,
        `redirects ${c.redirectUris.join(' ')}`,
        `registered ${c.createdAt}`,
      ].join('  '),
    )
    .join('\n');
}

/** One line per connection, for people at a terminal. */
export function formatConnections(body: { connections: Array<Record<string, any>> }): string {
  if (body.connections.length === 0) return 'No connections.';
  return body.connections
    .map((c) =>
      [
        c.id,
        c.revokedAt ? `REVOKED ${c.revokedAt} (${c.revokedReason})` : 'ACTIVE',
        `${c.application} <${c.clientId}>`,
        `as ${c.agent?.name ?? c.agent?.id}`,
        `granted by ${c.grantedBy?.name} on ${c.createdAt}`,
        `scopes ${c.scopes.join(' ')}`,
      ].join('  '),
    )
    .join('\n');
}

/** Reads a password from standard input: the first line, without its line ending. */
export async function readPasswordFromStdin(stdin: AsyncIterable<Buffer | string> = process.stdin): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0];
}
