import { useEffect, useState } from 'react';
import { standing } from '../api/endpoints';
import type { Standing } from '../api/types';
import { formatDateTime } from '../lib/format';
import { Link } from './Link';
import { TierLapsedBanner } from './TierLapsedBanner';

/**
 * On every page while the API refuses the account's requests, or runs them below a tier that lapsed: what is wrong,
 * in words, and the one action that fixes it. Asked again on each navigation, so a top-up on the Billing page clears
 * it on the next page.
 */
export function RefusalBanner({ path }: { path: string }) {
  const [state, setState] = useState<Standing>({ refusing: null, tierLapsed: null });
  const [asked, setAsked] = useState(0);
  // biome-ignore lint/correctness/useExhaustiveDependencies: path and asked are the triggers: the standing is asked again on each navigation and after a banner's action.
  useEffect(() => {
    let current = true;
    standing().then(
      (reply) => current && setState(reply),
      // The banner is a hint; a failed check leaves the page as it is (the page shows its own errors).
      () => undefined,
    );
    return () => {
      current = false;
    };
  }, [path, asked]);
  const { refusing, tierLapsed } = state;
  return (
    <>
      {refusing !== null && <NoCreditBanner refusing={refusing} path={path} />}
      {tierLapsed !== null && (
        <TierLapsedBanner lapsed={tierLapsed} path={path} onChanged={() => setAsked((value) => value + 1)} />
      )}
    </>
  );
}

function NoCreditBanner({ refusing, path }: { refusing: NonNullable<Standing['refusing']>; path: string }) {
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
