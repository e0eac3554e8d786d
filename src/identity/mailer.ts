import type { Transporter } from 'nodemailer';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

/** Sends one mail; rejects when the server refused it. */
export interface Mailer {
  send(message: MailMessage): Promise<void>;
  /** Closes pooled connections (shutdown). */
  close(): void;
}

/**
 * Mail through the SMTP server of SMTP_URL (`smtp://user:pass@host:port`, `smtps://` for TLS from the start;
 * STARTTLS is used whenever the server offers it). nodemailer keeps a small pool of connections, so a burst of
 * registrations does not open one connection each. nodemailer is loaded on the first mail, not at start-up: a
 * gateway that sends none (or not yet) does not carry its modules.
 */
export function createSmtpMailer(smtpUrl: string, from: string): Mailer {
  let transport: Promise<Transporter> | undefined;
  let closed = false;
  const open = async () => {
    const { createTransport } = await import('nodemailer');
    return createTransport(`${smtpUrl}${smtpUrl.includes('?') ? '&' : '?'}pool=true`, { from });
  };
  return {
    async send(message) {
      if (closed) throw new Error('The mailer is closed.');
      transport ??= open();
      await (await transport).sendMail({ to: message.to, subject: message.subject, text: message.text });
    },
    close() {
      closed = true;
      void transport?.then((opened) => opened.close());
    },
  };
}

/** The SMTP server's host and port for the start-up banner: never the user name or password in the URL. */
export function describeSmtpUrl(smtpUrl: string): string {
  try {
    const url = new URL(smtpUrl);
    return `${url.protocol}//${url.host}`;
  } catch {
    return 'SMTP';
  }
}
