// @grafana/data expects a browser when it loads (window 'storage' events, and react-use's CSS
// injection through document). The transforms touch no browser API; a jsdom window lets Node
// load the package to time them. Imported before anything else in the benchmark.
import { JSDOM } from 'jsdom';

const { window } = new JSDOM('<!doctype html><html><head></head><body></body></html>');
Object.assign(globalThis, { window, document: window.document, addEventListener: () => {}, removeEventListener: () => {} });
