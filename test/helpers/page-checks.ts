import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

/**
 * Checks every dashboard page gets in the Chromium suite: nothing clipped or spilling unseen, and no
 * accessibility violation of any impact by axe-core.
 */

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * Elements whose content is wider or taller than their box without the user being able to see it: clipped
 * (overflow hidden or clip) or spilling out over its neighbours (overflow visible), plus the page itself scrolling
 * sideways. A box that scrolls (overflow auto or scroll) is fine: its content can be reached, and tables show a cue.
 * Skipped: visually hidden text (clipped on purpose for screen readers), SVG internals, and inline text runs.
 */
const FIND_OVERFLOW = `(() => {
  const problems = [];
  const root = document.documentElement;
  if (root.scrollWidth > root.clientWidth + 1) problems.push('the page scrolls sideways by ' + (root.scrollWidth - root.clientWidth) + ' px');
  const describe = (element) => {
    const label = element.getAttribute('aria-label') || element.id || (element.textContent || '').trim().slice(0, 40);
    return element.tagName.toLowerCase() + (element.className && typeof element.className === 'string' ? '.' + element.className.trim().split(/\\s+/).join('.') : '') + ' "' + label + '"';
  };
  for (const element of document.body.querySelectorAll('*')) {
    if (element.closest('svg') !== null || element.closest('.visually-hidden') !== null) continue;
    const style = getComputedStyle(element);
    if (style.display === 'inline' || style.display === 'none' || style.visibility === 'hidden') continue;
    // Zero-width wrappers are layout devices (the chart library's sizing box), not boxes content is meant to fit.
    if (element.clientWidth === 0) continue;
    const wide = element.scrollWidth > element.clientWidth + 1;
    const tall = element.scrollHeight > element.clientHeight + 1;
    const scrollsX = style.overflowX === 'auto' || style.overflowX === 'scroll';
    const scrollsY = style.overflowY === 'auto' || style.overflowY === 'scroll';
    // Spilling inside a box that scrolls is reachable (a table inside its scrolling wrapper): not unseen.
    let reachable = false;
    if (wide && style.overflowX === 'visible') {
      for (let parent = element.parentElement; parent !== null && parent !== document.body; parent = parent.parentElement) {
        const overflowX = getComputedStyle(parent).overflowX;
        if (overflowX === 'visible') continue;
        reachable = overflowX === 'auto' || overflowX === 'scroll';
        break;
      }
    }
    if ((wide && !scrollsX && !reachable) || (tall && !scrollsY && style.overflowY !== 'visible')) {
      problems.push(describe(element) + ': content ' + element.scrollWidth + 'x' + element.scrollHeight + ' in a box of ' + element.clientWidth + 'x' + element.clientHeight);
    }
    if (problems.length >= 8) break;
  }
  return problems;
})()`;

export async function overflowProblems(page: Page): Promise<string[]> {
  return page.evaluate<string[]>(FIND_OVERFLOW);
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  targets: string[];
}

/** axe-core's violations of any impact (minor and moderate too) of the page as it is now. */
export async function allAxeViolations(page: Page): Promise<AxeViolation[]> {
  // Evaluated through the DevTools protocol, so the page's Content-Security-Policy (script-src 'self') allows it.
  if (!(await page.evaluate<boolean>('typeof window.axe !== "undefined"'))) await page.evaluate(AXE_SOURCE);
  return page.evaluate<AxeViolation[]>(`(async () => {
    const result = await window.axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((violation) => ({ id: violation.id, impact: violation.impact, help: violation.help, targets: violation.nodes.slice(0, 5).map((node) => node.target.join(' ')) }));
  })()`);
}

/**
 * Words broken across two lines although they would fit on one in their box ("Upstream_er|ror", "e2e back|end" in
 * a squeezed cell): each word's line boxes, from a DOM Range, more than one while its width is under its block's.
 * A word wider than its box (a long key name without spaces) may break: it cannot fit anyway.
 */
const FIND_BROKEN_WORDS = `(() => {
  const problems = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (parent === null || parent.closest('svg, .visually-hidden, pre, dialog:not([open])') !== null) continue;
    let block = parent;
    while (block !== null && getComputedStyle(block).display === 'inline') block = block.parentElement;
    if (block === null || block.clientWidth === 0) continue;
    const text = node.textContent || '';
    for (const match of text.matchAll(/\\S+/g)) {
      const range = document.createRange();
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      const lines = new Set([...range.getClientRects()].filter((rect) => rect.width > 0).map((rect) => Math.round(rect.top)));
      if (lines.size < 2) continue;
      const width = [...range.getClientRects()].reduce((sum, rect) => sum + rect.width, 0);
      if (width < block.clientWidth - 1) problems.push('"' + match[0] + '" in ' + block.tagName.toLowerCase() + '.' + String(block.className).trim().split(/\\s+/).join('.'));
      if (problems.length >= 8) return problems;
    }
  }
  return problems;
})()`;

export async function brokenWords(page: Page): Promise<string[]> {
  return page.evaluate<string[]>(FIND_BROKEN_WORDS);
}
