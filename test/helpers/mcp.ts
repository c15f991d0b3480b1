// An MCP client of the SDK over Streamable HTTP with a bearer token, and the error a tool answered with.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export async function mcpClient(baseUrl: string, token: string, name = 'mcp-test'): Promise<Client> {
  const c = new Client({ name, version: '1.0.0' });
  await c.connect(new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  return c;
}

/** The `error` of a tool result that is one (docs/reference/contract.md §7 codes); throws on a success. */
export const toolError = (value: unknown) => {
  const result = value as { isError?: unknown; content?: unknown };
  if (result.isError !== true) throw new Error(`expected a tool error, got ${JSON.stringify(result)}`);
  return JSON.parse((result.content as { text: string }[])[0].text).error as { code: string; message: string; issues?: { path: string; code: string }[] };
};
