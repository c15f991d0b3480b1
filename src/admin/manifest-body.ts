// Manifests arrive as JSON or YAML (Content-Type application/yaml, text/yaml or application/x-yaml).
import type { Context, Next } from 'koa';
import { mediaType, utf8Text } from '../http/body.ts';
import { ApiError } from '../http/errors.ts';
import { parseManifest } from '../manifests/parse.ts';

export const MANIFEST_LIMIT = 1024 * 1024;
const YAML_TYPES = new Set(['application/yaml', 'application/x-yaml', 'text/yaml', 'text/x-yaml']);

async function readText(ctx: Context, limit: number): Promise<string> {
  const declared = Number(ctx.get('content-length') || '0');
  if (declared > limit) throw new ApiError(413, 'payload_too_large', `A manifest is at most ${limit} bytes.`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new ApiError(413, 'payload_too_large', `A manifest is at most ${limit} bytes.`);
    chunks.push(chunk as Buffer);
  }
  return utf8Text(Buffer.concat(chunks), 'The manifest');
}

export async function manifestBody(ctx: Context, next: Next) {
  const type = mediaType(ctx);
  const isYaml = YAML_TYPES.has(type);
  if (type !== 'application/json' && !isYaml) {
    throw new ApiError(415, 'unsupported_media_type', 'Send the manifest as application/json or application/yaml.');
  }
  // Bounded as client input is, nesting included (src/manifests/parse.ts).
  ctx.state.body = parseManifest(await readText(ctx, MANIFEST_LIMIT), isYaml ? 'yaml' : 'json');
  return next();
}
