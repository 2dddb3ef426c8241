// Packages that ship only ES modules, which jest (CommonJS) must transform. '.pnpm' keeps the
// first node_modules/ of a pnpm path from matching, so the list decides on the package itself.
const nodeModulesToTransform = (moduleNames) => `node_modules/(?!.*(${moduleNames.join('|')})/.*)`;

const grafanaESModules = [
  '.pnpm',
  '@grafana/schema',
  '@react-hookz/web',
  '@ver0/deep-equal',
  '@wojtekmaj/date-utils',
  'd3',
  'd3-color',
  'd3-force',
  'd3-interpolate',
  'd3-scale-chromatic',
  'get-user-locale',
  'marked',
  'memoize',
  'mimic-function',
  'ol',
  'react-calendar',
  'react-colorful',
  'rxjs',
  'uuid',
];

module.exports = { nodeModulesToTransform, grafanaESModules };
