import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';

/**
 * What the Chromium suites do on the dashboard the way a person does it (labels, roles and headings, never CSS
 * classes), shared so a renamed button breaks every suite the same way instead of one copy drifting.
 */

/** Where the browser suites keep their page pictures, for a person to look at after a run. */
export const SCREENSHOTS = fileURLToPath(new URL('../artifacts/screenshots/', import.meta.url));

export async function screenshot(target: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  // Let charts (ResizeObserver-driven) lay out before the picture.
  await target.waitForTimeout(150);
  await target.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** A page from the main navigation (behind the Menu button on a phone), waiting for its heading. */
export async function openNav(target: Page, label: string): Promise<void> {
  const menu = target.getByRole('button', { name: 'Menu' });
  if (await menu.isVisible()) await menu.click();
  await target.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: label, exact: true }).click();
  await target.getByRole('heading', { level: 1, name: label }).waitFor();
}

/** The log-in form at `baseUrl`/login, landing on the Overview. */
export async function logIn(target: Page, baseUrl: string, email: string, password: string): Promise<void> {
  await target.goto(`${baseUrl}/login`);
  await target.getByLabel('Email').fill(email);
  await target.getByLabel('Password', { exact: true }).fill(password);
  await target.getByRole('button', { name: 'Log in' }).click();
  await target.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
}

/** On the API keys page: a key with this name, its secret read from the one-time dialog, which is then closed. */
export async function createKey(target: Page, name: string): Promise<string> {
  await target.getByLabel('Name', { exact: true }).fill(name);
  await target.getByRole('button', { name: 'Create key' }).click();
  const dialog = target.getByRole('dialog', { name: 'Save your key' });
  await dialog.waitFor();
  const secret = await dialog.getByLabel('Your new API key').inputValue();
  await dialog.getByRole('button', { name: 'Done' }).click();
  await dialog.waitFor({ state: 'hidden' });
  return secret;
}
