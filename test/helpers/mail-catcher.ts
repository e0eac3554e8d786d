/**
 * A real SMTP server on a loopback port (smtp-server) that keeps every mail it receives, parsed by mailparser:
 * what the gateway's nodemailer transport sends is read back exactly as a mail client would read it.
 */
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface CaughtMail {
  /** The first address of the To header. */
  to: string;
  /** Every address the mail was delivered to (the SMTP envelope's recipients), lower-cased. */
  recipients: string[];
  from: string;
  subject: string;
  text: string;
  /** The first link in the text. */
  link: string | undefined;
}

export interface MailCatcher {
  /** `smtp://127.0.0.1:port` for SMTP_URL. */
  url: string;
  mails: CaughtMail[];
  /**
   * The next mail delivered to `to` (case-insensitive; one of its recipients) that arrives after `since` such mails
   * had arrived; waits up to 10 s.
   */
  next(to: string, since?: number): Promise<CaughtMail>;
  /** Mails delivered to `to` so far (one recipient among others counts). */
  to(to: string): CaughtMail[];
  close(): Promise<void>;
}

export async function startMailCatcher(): Promise<MailCatcher> {
  const mails: CaughtMail[] = [];
  const waiters: Array<() => void> = [];
  const server = new SMTPServer({
    authOptional: true,
    // Plain SMTP on loopback: no certificate to make, and nodemailer only upgrades when STARTTLS is offered.
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const recipients = session.envelope.rcptTo.map((recipient) => recipient.address.toLowerCase());
      simpleParser(stream)
        .then((parsed) => {
          const to = Array.isArray(parsed.to) ? parsed.to[0] : parsed.to;
          const text = parsed.text ?? '';
          mails.push({
            to: to?.value[0]?.address ?? '',
            recipients,
            from: parsed.from?.text ?? '',
            subject: parsed.subject ?? '',
            text,
            link: /https?:\/\/\S+/.exec(text)?.[0],
          });
          for (const wake of waiters.splice(0)) wake();
          callback();
        })
        .catch((error: Error) => callback(error));
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.server.address();
  if (address === null || typeof address === 'string') throw new Error('SMTP server has no port');
  const matching = (to: string) => mails.filter((mail) => mail.recipients.includes(to.toLowerCase()));
  return {
    url: `smtp://127.0.0.1:${address.port}`,
    mails,
    to: matching,
    async next(to, since = matching(to).length) {
      const deadline = Date.now() + 10_000;
      while (matching(to).length <= since) {
        if (Date.now() > deadline) throw new Error(`No mail to ${to} within 10 s.`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 200);
        });
      }
      return matching(to)[since]!;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
