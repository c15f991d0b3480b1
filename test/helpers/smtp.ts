// A real SMTP server for the tests (smtp-server, in this process, on an ephemeral port), keeping every
// message it accepted as a mail client would read it (mailparser). It can refuse the next messages with
// a temporary failure (451), as a busy relay does, and keep refusing one recipient for now (452, a full
// mailbox).
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { SMTPServer } from 'smtp-server';
import { simpleParser, type ParsedMail } from 'mailparser';

export interface ReceivedMail {
  /** The envelope's recipients. */
  to: string[];
  mail: ParsedMail;
  /** The header X-Spend-Control-Notice: REQUEST or REMINDER. */
  notice: string;
  approvalId: string;
}

export interface TestSmtp {
  url: string;
  received: ReceivedMail[];
  /** How many messages were refused with a temporary failure. */
  refused: number;
  /** Refuses the next `count` messages (451, try again later). */
  failNext(count: number): void;
  /** Refuses this recipient at every attempt with a temporary failure (452: mailbox full, try later). */
  refuseRecipient(address: string): void;
  /** Waits until `done(received)` holds (else returns what there is after `seconds`). */
  until(done: (received: ReceivedMail[]) => boolean, seconds?: number): Promise<ReceivedMail[]>;
  close(): Promise<void>;
}

export async function startSmtp(): Promise<TestSmtp> {
  const received: ReceivedMail[] = [];
  let failures = 0;
  const full = new Set<string>();
  const state = { refused: 0 };
  const server = new SMTPServer({
    disabledCommands: ['AUTH', 'STARTTLS'],
    authOptional: true,
    logger: false,
    onRcptTo(address, _session, callback) {
      if (full.has(address.address.toLowerCase())) return callback(Object.assign(new Error('Mailbox full, try again later'), { responseCode: 452 }));
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        if (failures > 0) {
          failures--;
          state.refused++;
          const error = Object.assign(new Error('Busy, try again later'), { responseCode: 451 });
          return callback(error);
        }
        simpleParser(Buffer.concat(chunks)).then(
          (mail) => {
            received.push({
              to: session.envelope.rcptTo.map((r) => r.address),
              mail,
              notice: String(mail.headers.get('x-spend-control-notice') ?? ''),
              approvalId: String(mail.headers.get('x-spend-control-approval') ?? ''),
            });
            callback();
          },
          (error: Error) => callback(error),
        );
      });
    },
  });
  server.listen(0, '127.0.0.1');
  await once(server.server, 'listening');
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    get refused() {
      return state.refused;
    },
    failNext(count) {
      failures = count;
    },
    refuseRecipient(address) {
      full.add(address.toLowerCase());
    },
    async until(done, seconds = 20) {
      const deadline = Date.now() + seconds * 1000;
      while (!done(received) && Date.now() < deadline) await sleep(50);
      return received;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
