// What a per-address limit counts as one caller (the sign-in throttle, OAuth registrations and
// authorization requests; docs/reference/decisions.md): an IPv4 address (IPv4-mapped IPv6 included) is
// itself, an IPv6 address counts by its /64. A subscriber, host or cloud machine is given at least a
// /64 (RFC 6177) and may send from any of its 2^64 addresses, so counting each one let a single caller
// step past every limit.
import ipaddr from 'ipaddr.js';

export function addressBucket(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const ip = ipaddr.process(address);
  if (ip.kind() === 'ipv4') return ip.toString();
  const network = [...ip.toByteArray().slice(0, 8), 0, 0, 0, 0, 0, 0, 0, 0];
  return `${ipaddr.fromByteArray(network).toString()}/64`;
}
