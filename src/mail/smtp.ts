// Email through the operator's SMTP relay (SMTP_URL, SMTP_FROM: docs/operate/configuration.md), with
// nodemailer. Called from jobs only (src/approvals/notices.ts), never on a request's thread. One
// connection per message: messages are few (one per approver and approval), and nothing stays open.
import { createTransport } from 'nodemailer';
import type { SmtpConfig } from '../config.ts';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html: string;
  headers?: Record<string, string>;
}

export interface SentMail {
  messageId: string;
}

type Transport = ReturnType<typeof createTransport>;
const transports = new Map<string, Transport>();

function transportFor(config: SmtpConfig): Transport {
  let transport = transports.get(config.url);
  if (!transport) {
    // Bounded waits, so a silent relay fails the job (which is retried) instead of holding it for minutes.
    // Options in the URL's query (?connectionTimeout=…) take precedence over these.
    transport = createTransport({ url: config.url, connectionTimeout: 15_000, greetingTimeout: 15_000, socketTimeout: 30_000 });
    transports.set(config.url, transport);
  }
  return transport;
}

/** Hands one message to the relay. Throws when it was not accepted (see smtpRefusal for which are final). */
export async function sendMail(config: SmtpConfig, message: MailMessage): Promise<SentMail> {
  const info = await transportFor(config).sendMail({
    from: config.from,
    to: message.to,
    subject: message.subject,
    text: message.text,
    html: message.html,
    // RFC 3834: an automatic message, so that out-of-office replies are not sent back to it.
    headers: { 'Auto-Submitted': 'auto-generated', ...message.headers },
  });
  return { messageId: String(info.messageId ?? '') };
}

/**
 * The relay's permanent refusal of a message (a 5xx reply: no such mailbox, relaying denied): sending
 * it again will not help. Anything else (no connection, a timeout, a 4xx) is worth a retry.
 */
export function smtpRefusal(error: unknown): string | null {
  const code = replyCode(error);
  return code !== null && code >= 500 && code < 600 ? String((error as Error).message ?? code) : null;
}

/**
 * The relay answered, refusing this message for now (a 4xx reply: a full mailbox, greylisting): it is
 * up, so other messages may well go through. Anything without a reply (no connection, a timeout) is not.
 */
export function relayDeferred(error: unknown): boolean {
  const code = replyCode(error);
  return code !== null && code >= 400 && code < 500;
}

/** The relay's reply code to a failed send (nodemailer's responseCode); null when it never replied. */
function replyCode(error: unknown): number | null {
  const code = (error as { responseCode?: unknown } | null)?.responseCode;
  return typeof code === 'number' ? code : null;
}
