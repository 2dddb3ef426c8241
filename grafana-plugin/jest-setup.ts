import './.config/jest/polyfills';
import '@testing-library/jest-dom';
import { standardEditorsRegistry } from '@grafana/data';

// The registry calls this on first use, so test files that never build options do not pay for
// loading @grafana/ui.
standardEditorsRegistry.setInit(() => require('./test-support/standard-editors').editors);
