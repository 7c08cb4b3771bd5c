import { run } from './checks.mjs';
run('./pkg/browser.mjs').then((r) => postMessage(r));
