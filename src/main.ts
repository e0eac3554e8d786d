import type { Config } from './config/load-config.js';
import { describeSmtpUrl } from './identity/mailer.js';
import { startGateway, type RunningGateway } from './gateway.js';
import { tolerateClosedStandardOutput } from './observability/fail-safe-output.js';
import { describeDatabaseUrl } from './storage/open-storage.js';

/** `tollgate serve`: start, print the banner, and shut down gracefully on SIGTERM/SIGINT. */
export async function serve(config: Config): Promise<RunningGateway> {
  // A closed stdout (EPIPE) must not crash a gateway that is serving or draining: its output is only ever notes.
  tolerateClosedStandardOutput();
  const gateway = await startGateway(config);
  process.stdout.write(banner(gateway));
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) {
      // A second signal: the operator does not want to wait.
      process.stderr.write(`${signal} received again: exiting now.\n`);
      process.exit(1);
    }
    closing = true;
    process.stdout.write(
      `\n${signal} received: closing (in-flight requests get up to ${config.shutdownGraceMs} ms to finish)…\n`,
    );
    // Last resort if closing itself hangs (a dependency that never answers): grace, settlement time, then out.
    setTimeout(() => {
      process.stderr.write('Shutdown did not finish in time: exiting.\n');
      process.exit(1);
    }, config.shutdownGraceMs + 20_000).unref();
    gateway.close().then(
      () => {
        process.stdout.write('Closed cleanly.\n');
        process.exit(0);
      },
      (error: unknown) => {
        process.stderr.write(`Shutdown failed: ${String(error)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  return gateway;
}

/** The address a person on this machine opens: PUBLIC_BASE_URL, else localhost when bound to every interface. */
export function browserUrl(listeningUrl: string, host: string, publicBaseUrl: string | undefined): string {
  if (publicBaseUrl !== undefined) return publicBaseUrl;
  const url = new URL(listeningUrl);
  if (host === '0.0.0.0' || host === '::' || host === '' || host === 'localhost') url.hostname = 'localhost';
  return url.origin;
}

function banner(gateway: RunningGateway): string {
  const { config } = gateway;
  const origin = browserUrl(gateway.url, config.host, config.publicBaseUrl);
  const lines = [
    `Tollgate listening on ${gateway.url}`,
    `  dashboard: ${origin}/  (register there, create a key, see usage and billing)`,
    `  API:       ${origin}/v1  (OpenAI SDKs: this base URL; Anthropic SDKs: ${origin})`,
    `  storage: ${describeDatabaseUrl(config.databaseUrl)}`,
  ];
  lines.push(
    config.mail === undefined
      ? '  mail: not configured (set SMTP_URL and MAIL_FROM): no verification or reset mail; verify addresses and hand out reset links from the operator view or `tollgate accounts verify-email|reset-link`'
      : `  mail: ${describeSmtpUrl(config.mail.smtpUrl)} from ${config.mail.from}${config.requireVerifiedEmail ? ' (a verified email is required to create keys)' : ''}`,
  );
  if (config.demoMode) {
    lines.push(
      `  DEMO MODE: no vendor API keys are configured, so every model is served by the built-in simulator (${gateway.simulatorUrl}).`,
      '  Set OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY or DEEPSEEK_API_KEY to reach real vendors.',
    );
  } else {
    for (const [vendor, settings] of Object.entries(config.vendors)) {
      lines.push(`  ${vendor}: ${settings.configured ? settings.baseUrl : 'not configured'}`);
    }
  }
  lines.push(
    '',
    `Or from a shell: create an account (asks for a password) and a key, then call it:`,
    '  npm run --silent tollgate -- accounts create --email you@example.com',
    '  export TOLLGATE_API_KEY=$(npm run --silent tollgate -- keys create --email you@example.com --name dev | head -n 1)',
    `  curl ${origin}/v1/chat/completions -H "Authorization: Bearer $TOLLGATE_API_KEY" -H 'content-type: application/json' \\`,
    `    -d '{"model":"beta-5.4","messages":[{"role":"user","content":"Hello"}]}'`,
    '',
  );
  return lines.join('\n');
}
