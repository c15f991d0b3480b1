// The identifiers of docs/reference/contract.md §5.2, read from configuration at request time.
import type { Config } from '../../config.ts';

/** RFC 9207 / RFC 8414 issuer: `{base_url}` (docs/reference/contract.md §5.2: the `iss` of every authorization response). */
export const issuerOf = (config: Config) => config.baseUrl;

/** The only resource (RFC 8707) tokens are issued for, and the MCP endpoint's audience. */
export const mcpResourceOf = (config: Config) => `${config.baseUrl}/mcp`;

export const protectedResourceMetadataUrl = (config: Config) => `${config.baseUrl}/.well-known/oauth-protected-resource/mcp`;

export const authorizationEndpointOf = (config: Config) => `${config.authUrl}/oauth/authorize`;
export const tokenEndpointOf = (config: Config) => `${config.authUrl}/oauth/token`;
export const revocationEndpointOf = (config: Config) => `${config.authUrl}/oauth/revoke`;
export const registrationEndpointOf = (config: Config) => `${config.authUrl}/oauth/register`;

/** Registered clients get a client_id under this prefix, where their metadata document is served. */
export const registeredClientIdPrefix = (config: Config) => `${config.authUrl}/oauth/clients/`;
