// Resolved from the sidecar package, so the command works from any directory.
import { register } from 'tsx/esm/api';

register();
