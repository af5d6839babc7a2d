/** `npm run bench`: every benchmark in turn. */
await import('./ingest.js');
