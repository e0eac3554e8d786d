import type { TierInfo } from '../api/types';
import { formatCount } from '../lib/format';

export function TierTable({ tiers, current }: { tiers: TierInfo[]; current: string }) {
  return (
    <div className="table-wrap">
      <table className="table">
        <caption className="visually-hidden">Rate-limit tiers</caption>
        <thead>
          <tr>
            <th scope="col">Tier</th>
            <th scope="col" className="num">Requests/min</th>
            <th scope="col" className="num">Tokens/min</th>
          </tr>
        </thead>
        <tbody>
          {tiers.map((tier) => (
            <tr key={tier.name} aria-current={tier.name === current ? 'true' : undefined} className={tier.name === current ? 'row-current' : undefined}>
              <th scope="row">
                {tier.name}
                {tier.name === current && <span className="badge badge-blue tier-current">current</span>}
              </th>
              <td className="num">{formatCount(tier.requestsPerMinute)}</td>
              <td className="num">{tier.tokensPerMinute === null ? 'unlimited' : formatCount(tier.tokensPerMinute)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
