/**
 * When a simulated model runs the web search it was offered. A real model searches only when the turn needs it:
 * answering "say hi" with a search would bill a search fee no vendor charges for it. The simulator's stand-in for
 * that judgement: the search is forced, or the user's last text asks a question or for a lookup, and the turn
 * neither follows tool results nor calls a client tool instead.
 */
import { stripDirectives } from './fault-directives.js';

const LOOKUP = /\?|\b(search|find|look ?up|latest|today|current|news)\b/i;

export interface SearchTurn {
  /** The user's last text, directives included (they are stripped here). */
  lastUserText: string;
  /** The request forces the search tool (Claude Code's WebSearch does). */
  forced: boolean;
  /** The turn answers the client's tool results. */
  followsToolResults: boolean;
  /** Client tool calls the turn makes (a `tool=` directive plans one). */
  clientCalls: number;
}

export function searchesTheWeb(turn: SearchTurn): boolean {
  if (turn.followsToolResults || turn.clientCalls > 0) return false;
  return turn.forced || LOOKUP.test(stripDirectives(turn.lastUserText));
}
