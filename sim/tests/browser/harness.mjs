// What the browser tests share: starting `twice-sim web` on a free port (resolving with the
// URLs it prints) and stopping it, Chromium's flags, checks and their problems, pictures, and a
// participant scripted through the page's own API.
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join as joinPath } from 'node:path';
import { createInterface } from 'node:readline';

/** How long the server may take to print its URLs. */
const START_TIMEOUT_MS = 30_000;

/** Headless, and no calls home: without the networking flags Chromium keeps trying hosts it cannot reach. */
export const browserArgs = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** `twice-sim web` on a free port (or `address`); resolves with its URLs once it printed them. */
export function startServer(binary, args, address) {
  const child = spawn(binary, ['web', '--addr', address || '127.0.0.1:0', '--levels', 'levels', '--quiet', ...args],
    { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    const printed = [];
    const timer = setTimeout(() => reject(new Error(`no URLs within ${START_TIMEOUT_MS} ms: ${printed.join(' | ')}`)), START_TIMEOUT_MS);
    child.on('exit', (code) => reject(new Error(`twice-sim web exited (${code}): ${printed.join(' | ')}`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      printed.push(line);
      const presenter = line.match(/^presenter:\s+(\S+)/);
      if (presenter) {
        clearTimeout(timer);
        const participants = printed.map((text) => text.match(/^participants:\s+(\S+)/)).find(Boolean)[1];
        resolve({ child, participants, presenter: presenter[1], printed });
      }
    });
  });
}

/** Stops the server with `signal` (SIGTERM as Ctrl-C would, SIGKILL as a crash) and waits for it. */
export function stopServer(server, signal) {
  return new Promise((resolve) => {
    if (server.child.exitCode !== null || server.child.signalCode !== null) { resolve(); return; }
    server.child.removeAllListeners('exit');
    server.child.on('exit', () => resolve());
    server.child.kill(signal);
  });
}

/** What every check found wrong: a failed check stops its section, a script error is noted. */
export const problems = [];

/** A check: prints `ok` and its message, or stops the section with it. */
export function check(condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`);
  console.log(`ok   ${message}`);
}

/** A picture of `page` into TWICE_SCREENSHOTS (nothing when it is not set), without the toast. */
export async function shot(page, name, fullPage) {
  const folder = process.env.TWICE_SCREENSHOTS || '';
  if (!folder) return;
  mkdirSync(folder, { recursive: true });
  // The toast at the bottom says what the last click did; a picture does not need it.
  await page.evaluate(() => { const toast = document.getElementById('notice'); if (toast) toast.textContent = ''; });
  await page.screenshot({ path: joinPath(folder, `${name}.png`), fullPage: Boolean(fullPage) });
  console.log(`shot ${name}.png`);
}

/** The phase the level screen shows (`#phase`: "phase N …"). */
export const phaseOf = async (page) => Number((await page.textContent('#phase')).match(/phase (\d+)/)[1]);

/** Steps the open level until it shows `phase`, one Step click at a time. */
export async function stepTo(page, phase) {
  while ((await phaseOf(page)) < phase) {
    const before = await phaseOf(page);
    await page.click('#step');
    await page.waitForFunction((at) => document.querySelector('#phase').textContent.includes(`phase ${at + 1} `), before);
  }
}

/** Prints the problems and exits 1 if there are any, else says `label: all checks passed`. */
export function finish(label) {
  if (problems.length) {
    for (const problem of problems) console.error(`problem: ${problem}`);
    process.exit(1);
  }
  console.log(`${label}: all checks passed`);
}

/** A participant without a browser: the same JSON API the page uses, with its cookie. */
export class Scripted {
  constructor(base, name) { this.base = base; this.name = name; this.cookie = ''; }
  async send(method, path, body) {
    const response = await fetch(`${this.base}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(this.cookie ? { cookie: this.cookie } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const setCookie = response.headers.get('set-cookie');
    if (setCookie) this.cookie = setCookie.split(';')[0];
    const answer = await response.json();
    if (response.status !== 200) throw new Error(`${this.name}: ${method} ${path} answered ${response.status}: ${JSON.stringify(answer)}`);
    return answer;
  }
}
