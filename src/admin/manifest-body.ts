// Manifests arrive as JSON or YAML (Content-Type application/yaml, text/yaml or application/x-yaml), read
// by the reader of every other body (src/http/body.ts): the same content codings, the limit counted on
// the decoded bytes, strict UTF-8.
import type { Context, Next } from 'koa';
import { JSON_TYPES, bodyText, hasBody, isJsonType, mediaType } from '../http/body.ts';
import { ApiError } from '../http/errors.ts';
import { parseManifest } from '../manifests/parse.ts';

export const MANIFEST_LIMIT = 1024 * 1024;
const YAML_TYPES = ['application/yaml', 'application/x-yaml', 'text/yaml', 'text/x-yaml'];

const unsupported = () => new ApiError(415, 'unsupported_media_type', 'Send the manifest as application/json or application/yaml.');
const readManifest = bodyText(MANIFEST_LIMIT, [...JSON_TYPES, ...YAML_TYPES], 'The manifest');

export async function manifestBody(ctx: Context, next: Next) {
  const type = mediaType(ctx);
  const isYaml = YAML_TYPES.includes(type);
  if (!isJsonType(type) && !isYaml) throw unsupported();
  const text = await readManifest(ctx);
  // koa-body leaves unread a body whose type it does not match (see jsonBody).
  if (text === undefined && hasBody(ctx)) throw unsupported();
  // Bounded as client input is, nesting included (src/manifests/parse.ts).
  ctx.state.body = parseManifest(text ?? '', isYaml ? 'yaml' : 'json');
  return next();
}
