/** The built-in configuration (config/schema.ts holds every default): its options for the parts tests build by hand. */
import { loadConfig } from '../../src/config/load.js';

export const DEFAULTS = loadConfig(null);
