// What the browser tests that start their own `twice-sim web` share: starting it on a free
// port (resolving with the URLs it prints), stopping it, and Chromium's flags.
import { spawn } from 'node:child_process';
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
