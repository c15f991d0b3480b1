// A minimal MCP client built on the official SDK, for trying a connection locally:
//
//   node examples/mcp-client.ts http://localhost:3000/mcp
//
// It does what an assistant does: the first request gets a 401, the SDK discovers the authorization
// server, registers itself (Dynamic Client Registration; or set CLIENT_METADATA_URL to an https
// client ID metadata document instead), and prints the address for a person to open. After they
// sign in and allow it, the browser comes back to this script's loopback callback (RFC 8252), which
// checks `state` and `iss` (RFC 9207); the SDK exchanges the code and the script lists the tools
// and the connection's purchases. Everything is kept in memory: each run connects afresh.
import { createServer } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';

const endpoint = new URL(process.argv[2] ?? 'http://localhost:3000/mcp');
const issuer = endpoint.href.replace(/\/mcp$/, '');

const callback = createServer();
callback.listen(0, '127.0.0.1');
await once(callback, 'listening');
const redirectUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;

class MemoryProvider implements OAuthClientProvider {
  clientMetadataUrl = process.env.CLIENT_METADATA_URL || undefined;
  expectedState = '';
  #client: OAuthClientInformationMixed | undefined;
  #tokens: OAuthTokens | undefined;
  #verifier = '';
  get redirectUrl() {
    return redirectUrl;
  }
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'Example MCP client', redirect_uris: [redirectUrl], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' };
  }
  state() {
    return (this.expectedState = randomBytes(16).toString('base64url'));
  }
  clientInformation = () => this.#client;
  saveClientInformation = (info: OAuthClientInformationMixed) => void (this.#client = info);
  tokens = () => this.#tokens;
  saveTokens = (tokens: OAuthTokens) => void (this.#tokens = tokens);
  redirectToAuthorization(url: URL) {
    process.stdout.write(`Open this address in a browser to connect:\n${url.href}\n`);
  }
  saveCodeVerifier = (verifier: string) => void (this.#verifier = verifier);
  codeVerifier = () => this.#verifier;
  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery') {
    if (scope === 'all' || scope === 'client') this.#client = undefined;
    if (scope === 'all' || scope === 'tokens') this.#tokens = undefined;
  }
}

const provider = new MemoryProvider();

/** The authorization response, checked as RFC 6749 10.12 and RFC 9207 ask. */
const code = new Promise<string>((resolve, reject) => {
  callback.on('request', (req, res) => {
    const url = new URL(req.url ?? '/', redirectUrl);
    if (url.pathname !== '/callback') return void res.writeHead(404).end();
    const problem =
      url.searchParams.get('state') !== provider.expectedState ? 'the state does not match'
      : url.searchParams.get('iss') !== issuer ? `the issuer is not ${issuer}`
      : url.searchParams.get('error') ?? (url.searchParams.get('code') ? null : 'no code');
    res.writeHead(problem ? 400 : 200, { 'content-type': 'text/plain; charset=utf-8' }).end(problem ? `Not connected: ${problem}.` : 'Connected. You can close this tab.');
    if (problem) reject(new Error(`authorization failed: ${problem}`));
    else resolve(url.searchParams.get('code')!);
  });
});

async function connect(): Promise<Client> {
  const client = new Client({ name: 'example-mcp-client', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(endpoint, { authProvider: provider }));
  return client;
}

let client: Client;
try {
  client = await connect();
} catch (err) {
  if (!(err instanceof UnauthorizedError)) throw err;
  const transport = new StreamableHTTPClientTransport(endpoint, { authProvider: provider });
  await transport.finishAuth(await code);
  client = await connect();
}
callback.close();
const { tools } = await client.listTools();
process.stdout.write(`Connected. Tools: ${tools.map((t) => t.name).join(', ')}\n`);
if (tools.some((t) => t.name === 'list_purchases')) {
  const listed = await client.callTool({ name: 'list_purchases', arguments: { limit: 10 } });
  process.stdout.write(`${JSON.stringify(listed.structuredContent)}\n`);
}
await client.close();
