import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import { ApiError } from '../api/client';
import { models as modelsApi, overview } from '../api/endpoints';
import { streamPlayground, type PlaygroundReply, type PlaygroundRequest } from '../api/playground';
import { CodeTabs } from '../components/CodeTabs';
import { ErrorNotice, Loading, Notice } from '../components/Notice';
import { PageHeader } from '../components/PageHeader';
import { PlaygroundReplyView } from '../components/playground/PlaygroundReplyView';
import { playgroundSamples } from '../lib/playground-code';
import { type PlaygroundForm, requestFromForm } from '../lib/playground-form';
import { useAsync } from '../lib/use-async';

type Turn = { role: 'user'; content: string } | { role: 'assistant'; reply: PlaygroundReply };

const GREETING: PlaygroundRequest['messages'] = [{ role: 'user', content: 'Hello!' }];

/** What a refusal before the reply started says: the API's own code and words. */
function refusalText(error: unknown): { code: string; message: string } {
  if (error instanceof ApiError) return { code: `${error.status} ${error.code}`, message: error.message };
  return { code: 'error', message: error instanceof Error ? error.message : String(error) };
}

/**
 * Try any model of the account in the browser: a conversation of several turns, streamed as it arrives, each reply
 * with its exact cost. Every send is a real request of the account (its playground key, limits and balance), so a
 * refusal here is the one the API would give; "View code" shows the same request for the SDKs.
 */
export function PlaygroundPage() {
  const catalog = useAsync(modelsApi, []);
  const base = useAsync(overview, []);
  const ids = useId();
  const [form, setForm] = useState<PlaygroundForm>({
    model: '',
    system: '',
    temperature: '',
    maxTokens: '',
    effort: '',
    toolsText: '',
  });
  const [draft, setDraft] = useState('');
  const [toolsError, setToolsError] = useState<string>();
  const [turns, setTurns] = useState<Turn[]>([]);
  const [refusal, setRefusal] = useState<{ code: string; message: string }>();
  const [showCode, setShowCode] = useState(false);
  const [running, setRunning] = useState(false);
  const abort = useRef<AbortController | null>(null);
  const list = catalog.data?.models;
  const first = list?.[0]?.id;
  useEffect(() => {
    if (first !== undefined) setForm((current) => (current.model === '' ? { ...current, model: first } : current));
  }, [first]);
  useEffect(() => () => abort.current?.abort(), []);
  const chosen = list?.find((entry) => entry.id === form.model);
  const change = (field: keyof PlaygroundForm) => (event: { target: { value: string } }) =>
    setForm((current) => ({ ...current, [field]: event.target.value }));

  function conversation(next?: string): PlaygroundRequest['messages'] {
    const messages: PlaygroundRequest['messages'] = [];
    for (const turn of turns) {
      if (turn.role === 'user') messages.push(turn);
      else if (turn.reply.text !== '') messages.push({ role: 'assistant', content: turn.reply.text });
    }
    if (next !== undefined && next.trim() !== '') messages.push({ role: 'user', content: next });
    return messages;
  }

  async function send(event: FormEvent) {
    event.preventDefault();
    if (draft.trim() === '' || running) return;
    const built = requestFromForm(form, chosen, conversation(draft));
    setToolsError(built.toolsError);
    if (built.request === undefined) return;
    const request = built.request;
    const controller = new AbortController();
    abort.current = controller;
    setRefusal(undefined);
    setRunning(true);
    const sent = draft;
    const index = turns.length + 1;
    setTurns((current) => [...current, { role: 'user', content: sent }]);
    setDraft('');
    let latest: PlaygroundReply | undefined;
    try {
      await streamPlayground(request, controller.signal, (reply) => {
        latest = reply;
        setTurns((current) => [...current.slice(0, index), { role: 'assistant', reply }]);
      });
    } catch (error) {
      const started = latest;
      if (started !== undefined) {
        // Cut after the reply started (Stop, or the connection went): billed for what was delivered, as on the API.
        const cut = controller.signal.aborted
          ? { code: 'stopped', message: 'You stopped the reply; what was delivered is billed (see Usage).' }
          : refusalText(error);
        setTurns((current) => [
          ...current.slice(0, index),
          { role: 'assistant', reply: { ...started, done: true, error: started.error ?? cut } },
        ]);
      } else {
        // Refused (or stopped) before any output: the message goes back into the box, nothing was billed.
        if (!controller.signal.aborted) setRefusal(refusalText(error));
        setTurns((current) => current.slice(0, index - 1));
        setDraft(sent);
      }
    } finally {
      setRunning(false);
      abort.current = null;
    }
  }

  // The code shows the conversation so far and the draft (a greeting when both are empty).
  const codeMessages = conversation(draft).length > 0 ? conversation(draft) : GREETING;
  // Tools that are not JSON yet are left out of the code, not a reason to show none.
  const codeRequest =
    form.model === ''
      ? undefined
      : (requestFromForm(form, chosen, codeMessages).request ??
        requestFromForm({ ...form, toolsText: '' }, chosen, codeMessages).request);

  return (
    <>
      <PageHeader
        title="Playground"
        description="Try any model on your account. Each reply is a real request: billed like the API and listed under Usage as “playground”."
      />
      <ErrorNotice error={catalog.error} />
      {catalog.loading && list === undefined && <Loading />}
      {list !== undefined && (
        <div className="playground">
          <form className="card section playground-settings" onSubmit={send} aria-label="Request">
            <div className="field">
              <label htmlFor={`${ids}-model`}>Model</label>
              <select id={`${ids}-model`} className="input" value={form.model} onChange={change('model')}>
                {list.map((entry) => (
                  <option key={entry.id} value={entry.id}>
                    {entry.id}
                  </option>
                ))}
              </select>
            </div>
            <div className="field">
              <label htmlFor={`${ids}-system`}>System prompt</label>
              <textarea
                id={`${ids}-system`}
                className="input"
                rows={3}
                value={form.system}
                onChange={change('system')}
              />
            </div>
            <div className="playground-numbers">
              <div className="field">
                <label htmlFor={`${ids}-temperature`}>Temperature</label>
                <input
                  id={`${ids}-temperature`}
                  className="input"
                  type="number"
                  min={0}
                  max={2}
                  step={0.1}
                  placeholder="Default"
                  value={form.temperature}
                  onChange={change('temperature')}
                />
              </div>
              <div className="field">
                <label htmlFor={`${ids}-max-tokens`}>Max tokens</label>
                <input
                  id={`${ids}-max-tokens`}
                  className="input"
                  type="number"
                  min={1}
                  max={chosen?.maxOutputTokens}
                  step={1}
                  placeholder="Default"
                  value={form.maxTokens}
                  onChange={change('maxTokens')}
                />
              </div>
              {chosen?.capabilities.reasoning === true && (
                <div className="field">
                  <label htmlFor={`${ids}-effort`}>Reasoning</label>
                  <select id={`${ids}-effort`} className="input" value={form.effort} onChange={change('effort')}>
                    <option value="">Default</option>
                    <option value="low">Low</option>
                    <option value="medium">Medium</option>
                    <option value="high">High</option>
                  </select>
                </div>
              )}
            </div>
            {chosen?.capabilities.tools === true && (
              <details className="playground-tools">
                <summary>Tools (optional)</summary>
                <div className="field">
                  <label htmlFor={`${ids}-tools`}>Tools as JSON</label>
                  <textarea
                    id={`${ids}-tools`}
                    className="input mono"
                    rows={4}
                    placeholder='[{"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]'
                    aria-invalid={toolsError !== undefined}
                    value={form.toolsText}
                    onChange={change('toolsText')}
                  />
                  {toolsError !== undefined && <p className="field-error">{toolsError}</p>}
                </div>
              </details>
            )}
            <div className="field">
              <label htmlFor={`${ids}-message`}>Message</label>
              <textarea
                id={`${ids}-message`}
                className="input"
                rows={4}
                value={draft}
                onChange={(event) => setDraft(event.target.value)}
              />
            </div>
            <div className="playground-actions">
              <button type="submit" className="button button-primary" disabled={running || draft.trim() === ''}>
                {running ? 'Sending…' : 'Send'}
              </button>
              {running && (
                <button type="button" className="button button-secondary" onClick={() => abort.current?.abort()}>
                  Stop
                </button>
              )}
              <button
                type="button"
                className="button button-secondary"
                disabled={running || turns.length === 0}
                onClick={() => {
                  setTurns([]);
                  setRefusal(undefined);
                }}
              >
                Clear conversation
              </button>
              <button
                type="button"
                className="button button-secondary"
                aria-expanded={showCode}
                onClick={() => setShowCode((open) => !open)}
              >
                {showCode ? 'Hide code' : 'View code'}
              </button>
            </div>
          </form>
          {showCode && codeRequest !== undefined && base.data !== undefined && (
            <section className="card section" aria-labelledby={`${ids}-code-heading`}>
              <h2 id={`${ids}-code-heading`}>This request as code</h2>
              <p className="muted small">
                Runs as copied with your key in the <code>TOLLGATE_API_KEY</code> environment variable.
              </p>
              <CodeTabs label="Code language" samples={playgroundSamples(base.data.baseUrl, codeRequest)} />
            </section>
          )}
          {refusal !== undefined && (
            <Notice kind="error">
              <strong>The API refused this request</strong> (<code>{refusal.code}</code>): {refusal.message}
            </Notice>
          )}
          <section className="card section playground-conversation" aria-labelledby={`${ids}-conversation`}>
            <h2 id={`${ids}-conversation`}>Conversation</h2>
            {turns.length === 0 && <p className="muted">Nothing sent yet.</p>}
            <div aria-live="polite">
              {turns.map((turn, index) =>
                turn.role === 'user' ? (
                  // biome-ignore lint/suspicious/noArrayIndexKey: turns are only appended or cleared, never reordered.
                  <article key={index} className="playground-turn" aria-label="Your message">
                    <p className="playground-role">You</p>
                    <p className="playground-text">{turn.content}</p>
                  </article>
                ) : (
                  // biome-ignore lint/suspicious/noArrayIndexKey: as above.
                  <PlaygroundReplyView key={index} reply={turn.reply} />
                ),
              )}
            </div>
          </section>
        </div>
      )}
    </>
  );
}
