// A nameserver on 127.0.0.1 (UDP) for the tests: it answers A and AAAA from a table, says NXDOMAIN
// for names not in it, and never answers at all for the names marked `silent` (a nameserver that
// has gone dark, or one an attacker runs). It counts the queries it receives per name.
import { createSocket, type RemoteInfo } from 'node:dgram';
import { isIPv4, isIPv6 } from 'node:net';

export type Zone = Record<string, { a?: string[]; aaaa?: string[] } | 'silent'>;

export interface Nameserver {
  /** `127.0.0.1:<port>`, as node:dns setServers takes it. */
  address: string;
  zone: Zone;
  /** Queries received, per lower-case name. */
  queries: Record<string, number>;
  close(): Promise<void>;
}

const TYPE_A = 1;
const TYPE_AAAA = 28;

function parseQuestion(msg: Buffer): { name: string; type: number; end: number } | null {
  let at = 12;
  const labels: string[] = [];
  while (at < msg.length) {
    const len = msg[at];
    if (len === 0) break;
    if (len > 63) return null; // no compression in a question we sent ourselves
    labels.push(msg.subarray(at + 1, at + 1 + len).toString('latin1'));
    at += 1 + len;
  }
  if (at + 5 > msg.length) return null;
  return { name: labels.join('.').toLowerCase(), type: msg.readUInt16BE(at + 1), end: at + 5 };
}

function rdata(type: number, address: string): Buffer {
  if (type === TYPE_A) return Buffer.from(address.split('.').map(Number));
  const [head, tail = ''] = address.split('::');
  const words = (s: string) => (s === '' ? [] : s.split(':').map((w) => parseInt(w, 16)));
  const h = words(head);
  const tl = words(tail);
  const all = address.includes('::') ? [...h, ...Array(8 - h.length - tl.length).fill(0), ...tl] : h;
  const buf = Buffer.alloc(16);
  all.forEach((w, i) => buf.writeUInt16BE(w, i * 2));
  return buf;
}

export async function startNameserver(zone: Zone = {}): Promise<Nameserver> {
  const socket = createSocket('udp4');
  const queries: Record<string, number> = {};
  const state: Nameserver = {
    address: '',
    zone,
    queries,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
  socket.on('message', (msg: Buffer, from: RemoteInfo) => {
    const q = parseQuestion(msg);
    if (!q) return;
    queries[q.name] = (queries[q.name] ?? 0) + 1;
    const entry = state.zone[q.name];
    if (entry === 'silent') return;
    const records = entry === undefined ? [] : ((q.type === TYPE_A ? entry.a : q.type === TYPE_AAAA ? entry.aaaa : []) ?? []);
    const valid = records.filter((r) => (q.type === TYPE_A ? isIPv4(r) : isIPv6(r)));
    const header = Buffer.alloc(12);
    msg.copy(header, 0, 0, 2); // id
    // QR, the query's RD, RA; rcode NXDOMAIN (3) for unknown names, else NOERROR (empty = NODATA).
    header.writeUInt16BE(0x8000 | (msg.readUInt16BE(2) & 0x0100) | 0x0080 | (entry === undefined ? 3 : 0), 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(valid.length, 6);
    const answers = valid.map((address) => {
      const data = rdata(q.type, address);
      const rr = Buffer.alloc(12);
      rr.writeUInt16BE(0xc00c, 0); // the question's name
      rr.writeUInt16BE(q.type, 2);
      rr.writeUInt16BE(1, 4); // IN
      rr.writeUInt32BE(60, 6);
      rr.writeUInt16BE(data.length, 10);
      return Buffer.concat([rr, data]);
    });
    socket.send(Buffer.concat([header, msg.subarray(12, q.end), ...answers]), from.port, from.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  state.address = `127.0.0.1:${socket.address().port}`;
  return state;
}
