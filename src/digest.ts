// The one SHA-256 digest of a text the service stores and looks secrets up by: API keys, OAuth
// credentials, the operator token, request bodies. Lower-case hex of the UTF-8 bytes.
import { createHash } from 'node:crypto';

export const sha256Hex = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');
