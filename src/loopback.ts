// Whether an address is the machine's own (127.0.0.0/8, ::1, and IPv4-mapped forms of the first):
// for the wire listener's bound address (src/store/wire/embedded-listener.ts) and the redirect URIs
// the consent page warns about (src/identity/oauth/redirect-uri.ts). Webhook destinations have a
// stricter check of their own (src/webhooks/destination.ts refuses IPv4-mapped literals outright).
import ipaddr from 'ipaddr.js';

export function isLoopbackAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  return ipaddr.process(address).range() === 'loopback';
}
