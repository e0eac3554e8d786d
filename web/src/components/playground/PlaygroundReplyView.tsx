import type { PlaygroundReply } from '../../api/playground';
import { formatCount } from '../../lib/format';

/** A reply as it streams in: reasoning folded, tool calls, the text, then the exact cost and tokens once settled. */
export function PlaygroundReplyView({ reply }: { reply: PlaygroundReply }) {
  return (
    <article className="playground-turn playground-assistant" aria-label={`Reply from ${reply.model}`}>
      <p className="playground-role">{reply.model}</p>
      {reply.reasoning !== '' && (
        <details className="playground-reasoning">
          <summary>Reasoning ({formatCount(reply.reasoning.length)} characters)</summary>
          <p className="playground-text">{reply.reasoning}</p>
        </details>
      )}
      {reply.text !== '' && <p className="playground-text">{reply.text}</p>}
      {reply.toolCalls.length > 0 && (
        <ul className="playground-tool-calls" aria-label="Tool calls">
          {reply.toolCalls.map((call) => (
            <li key={call.id || call.name}>
              <span className="small muted">Tool call</span> <code>{call.name}</code>
              <pre className="code playground-arguments">{call.arguments}</pre>
            </li>
          ))}
        </ul>
      )}
      {reply.error !== null && (
        <p className="field-error" role="alert">
          The reply stopped: {reply.error.message} (<code>{reply.error.code}</code>)
        </p>
      )}
      {!reply.done && <p className="small muted">Streaming…</p>}
      <p className="small playground-cost">
        {reply.usage !== null && (
          <>
            Cost <strong>${reply.usage.costUsd ?? 'not yet settled'}</strong> · {formatCount(reply.usage.inputTokens)}{' '}
            in
            {reply.usage.cachedTokens > 0 && <> ({formatCount(reply.usage.cachedTokens)} cached)</>} /{' '}
            {formatCount(reply.usage.outputTokens)} out
            {reply.usage.reasoningTokens > 0 && <> ({formatCount(reply.usage.reasoningTokens)} reasoning)</>}
            {reply.finishReason !== null && <> · stopped: {reply.finishReason}</>} ·{' '}
          </>
        )}
        {reply.requestId !== null && (
          <>
            request <code>{reply.requestId}</code>
          </>
        )}
      </p>
    </article>
  );
}
