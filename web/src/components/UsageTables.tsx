import type { UsageDaily } from '../api/types';
import { formatCount } from '../lib/format';
import { formatCost } from '../lib/money';

export function ModelBreakdown({ rows }: { rows: UsageDaily['byModel'] }) {
  if (rows.length === 0) return <p className="muted">No requests in this range.</p>;
  return (
    <div className="table-wrap">
      <table className="table table-stack">
        <caption className="visually-hidden">Usage by model</caption>
        <thead>
          <tr>
            <th scope="col">Model</th>
            <th scope="col" className="num">Requests</th>
            <th scope="col" className="num">Input</th>
            <th scope="col" className="num">Output</th>
            <th scope="col" className="num">Cached</th>
            <th scope="col" className="num">Cost</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.model}>
              <th scope="row" className="nowrap">
                {row.model}
              </th>
              <td data-label="Requests" className="num">
                {formatCount(row.requests)}
              </td>
              <td data-label="Input" className="num">
                {formatCount(row.inputTokens)}
              </td>
              <td data-label="Output" className="num">
                {formatCount(row.outputTokens)}
              </td>
              <td data-label="Cached" className="num">
                {formatCount(row.cacheReadTokens + row.cacheWriteTokens)}
              </td>
              <td data-label="Cost" className="num">
                {formatCost(row.costUsd)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function KeyBreakdown({ rows }: { rows: UsageDaily['byKey'] }) {
  if (rows.length === 0) return <p className="muted">No requests in this range.</p>;
  return (
    <div className="table-wrap">
      <table className="table table-stack">
        <caption className="visually-hidden">Usage by key</caption>
        <thead>
          <tr>
            <th scope="col">Key</th>
            <th scope="col" className="num">Requests</th>
            <th scope="col" className="num">Input</th>
            <th scope="col" className="num">Output</th>
            <th scope="col" className="num">Cost</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.keyId}>
              <th scope="row">
                {row.keyName} <code className="hint">{row.hint}</code>
              </th>
              <td data-label="Requests" className="num">
                {formatCount(row.requests)}
              </td>
              <td data-label="Input" className="num">
                {formatCount(row.inputTokens)}
              </td>
              <td data-label="Output" className="num">
                {formatCount(row.outputTokens)}
              </td>
              <td data-label="Cost" className="num">
                {formatCost(row.costUsd)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
