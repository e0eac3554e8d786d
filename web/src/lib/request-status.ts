/**
 * A usage record's status (`ok`, `slice_refused`, …) in words, with what it means for the caller and the bill:
 * the request tables show the words and unfold the meaning.
 */
export interface StatusWords {
  label: string;
  tone: 'ok' | 'error' | 'warning';
  detail: string;
}

const WORDS: Readonly<Record<string, StatusWords>> = {
  ok: { label: 'Completed', tone: 'ok', detail: 'The model answered in full; the reply is billed as reported.' },
  slice_refused: {
    label: 'Stopped: balance ran out',
    tone: 'warning',
    detail:
      'The reply was cut short because the balance (or the key’s spend limit) could not pay for more output. What was delivered is billed; add credit or raise the limit to get full replies.',
  },
  upstream_error: {
    label: 'Vendor error',
    tone: 'error',
    detail:
      'The model’s vendor failed before the reply ended. Only what was delivered is billed; nothing when nothing was.',
  },
  client_disconnected: {
    label: 'Caller disconnected',
    tone: 'warning',
    detail: 'The caller closed the connection before the reply ended. What the vendor had produced by then is billed.',
  },
  instance_lost: {
    label: 'Interrupted: gateway restarted',
    tone: 'error',
    detail:
      'The gateway instance serving the request stopped before it ended; it was billed for the output delivered by then.',
  },
};

export function statusWords(status: string): StatusWords {
  return (
    WORDS[status] ?? {
      label: status.charAt(0).toUpperCase() + status.slice(1).replaceAll('_', ' '),
      tone: 'error',
      detail: `The gateway recorded this request as “${status}”.`,
    }
  );
}
