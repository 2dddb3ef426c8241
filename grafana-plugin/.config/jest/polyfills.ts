// What jsdom lacks and @grafana/ui touches while it loads: must run before it is imported.
import { TextDecoder, TextEncoder } from 'util';

Object.assign(globalThis, { TextDecoder, TextEncoder });

// @grafana/ui reads matchMedia for theme breakpoints.
Object.defineProperty(globalThis, 'matchMedia', {
  writable: true,
  value: (query: string) => ({
    matches: false,
    media: query,
    onchange: null,
    addListener: () => {},
    removeListener: () => {},
    addEventListener: () => {},
    removeEventListener: () => {},
    dispatchEvent: () => false,
  }),
});

// uPlot (behind Sparkline) draws on a 2D canvas, which jsdom does not have: a context whose
// every method does nothing lets it run. What the sparklines look like is checked in Chromium.
const context2d: object = new Proxy(
  {},
  {
    get: (_target, prop) => {
      if (prop === 'measureText') {
        return () => ({ width: 0 });
      }
      if (prop === 'canvas') {
        return undefined;
      }
      return () => undefined;
    },
    set: () => true,
  }
);
HTMLCanvasElement.prototype.getContext = (() => context2d) as unknown as typeof HTMLCanvasElement.prototype.getContext;

// uPlot builds its paths as Path2D objects before stroking them on the context above.
class Path2DStub {
  addPath() {}
  moveTo() {}
  lineTo() {}
  rect() {}
  arc() {}
  bezierCurveTo() {}
  quadraticCurveTo() {}
  closePath() {}
}
Object.assign(globalThis, { Path2D: Path2DStub });
