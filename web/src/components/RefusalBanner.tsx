import { useEffect, useState } from 'react';
import { standing } from '../api/endpoints';
import type { Standing } from '../api/types';
import { formatDateTime } from '../lib/format';
import { Link } from './Link';

/**
 * On every page while the API refuses the account's requests: what is wrong, in words, and the one action that
 * fixes it. Asked again on each navigation, so a top-up on the Billing page clears it on the next page.
 */
export function RefusalBanner({ path }: { path: string }) {
  const [refusing, setRefusing] = useState<Standing['refusing']>(null);
  // biome-ignore lint/correctness/useExhaustiveDependencies: path is the trigger: the standing is asked again on each navigation.
  useEffect(() => {
    let current = true;
    standing().then(
      (reply) => current && setRefusing(reply.refusing),
      // The banner is a hint; a failed check leaves the page as it is (the page shows its own errors).
      () => undefined,
    );
    return () => {
      current = false;
    };
  }, [path]);
  if (refusing === null) return null;
  return (
    <div className="refusal-banner" role="alert">
      <p>
        <strong>Your API requests are being refused:</strong> your balance is $0.00 and today's free tokens are used up,
        so every call gets <code>403 insufficient_balance</code>.
        {refusing.freeTokensReturnAt !== null && (
          <> Free tokens return {formatDateTime(refusing.freeTokensReturnAt)}.</>
        )}
      </p>
      {path !== '/billing' && (
        <Link href="/billing" className="button button-primary button-small">
          Add credit
        </Link>
      )}
    </div>
  );
}
