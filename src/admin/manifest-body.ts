// Manifests arrive as JSON or YAML (Content-Type application/yaml, text/yaml or application/x-yaml).
import type { Context, Next } from 'koa';
import { pipeline, type Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { mediaType, utf8Text } from '../http/body.ts';
import { ApiError } from '../http/errors.ts';
import { parseManifest } from '../manifests/parse.ts';

export const MANIFEST_LIMIT = 1024 * 1024;
const YAML_TYPES = new Set(['application/yaml', 'application/x-yaml', 'text/yaml', 'text/x-yaml']);

/** The content codings a JSON body may have (src/http/body.ts), read here too: case-insensitive (RFC 9110 8.4.1). */
const DECODERS: Record<string, () => NodeJS.ReadWriteStream> = { gzip: createGunzip, deflate: createInflate, br: createBrotliDecompress };

function decodedBody(ctx: Context): Readable {
  const encoding = ctx.get('content-encoding').trim().toLowerCase();
  if (encoding === '' || encoding === 'identity') return ctx.req;
  const decoder = DECODERS[encoding];
  if (decoder === undefined) throw new ApiError(415, 'unsupported_media_type', 'Send the manifest without Content-Encoding, or with gzip, deflate or br.');
  return pipeline(ctx.req, decoder(), () => {}) as unknown as Readable;
}

/** The manifest's text, at most `limit` bytes once decoded (as the JSON bodies' limits are). */
async function readText(ctx: Context, limit: number): Promise<string> {
  const declared = Number(ctx.get('content-length') || '0');
  if (declared > limit) throw new ApiError(413, 'payload_too_large', `A manifest is at most ${limit} bytes.`);
  const body = decodedBody(ctx);
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      size += (chunk as Buffer).length;
      if (size > limit) throw new ApiError(413, 'payload_too_large', `A manifest is at most ${limit} bytes.`);
      chunks.push(chunk as Buffer);
    }
  } catch (error) {
    if (error instanceof ApiError || body === ctx.req) throw error;
    throw new ApiError(400, 'malformed_json', `The manifest could not be decoded as ${ctx.get('content-encoding').trim()}.`);
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
